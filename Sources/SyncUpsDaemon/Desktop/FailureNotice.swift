import SyncUpsBus
import SyncUpsJSON
import SyncUpsProtocol

/// What the desktop shows of the failing writes of the user's data: one notification per failure episode.
/// The first `persistence.failed` after nothing failed shows it (critical); the failures that follow in the
/// same episode (another write, another error, each a `persistence.failed` for the socket's clients and named
/// by `status`) show nothing more; `persistence.recovered` replaces it in place with the news that saving
/// works again, so no critical notification stays on screen once it is over.
struct FailureNotice {
    /// The episode's notification has been shown, and its recovery not yet.
    private(set) var isShown = false

    /// Its one slot: the failure and its recovery replace each other, and nothing else.
    static let slot = "persistence"

    /// The notification for `name` (a `persistence.*` event), if one is to be shown now. `canShow` false (no
    /// session bus, `notify none`): nothing is, and a failure is not counted as shown, but a recovery still
    /// ends the episode.
    mutating func notification(for name: String, canShow: Bool, _ data: () -> JSONValue) -> DesktopNotification? {
        switch name {
        case EventName.persistenceFailed:
            guard canShow, !isShown else { return nil }
            isShown = true
            return DesktopNotification(
                slot: Self.slot, summary: "syncupsd cannot save your sync-ups",
                body: data()["error"]?.stringValue ?? "", urgency: .critical)
        case EventName.persistenceRecovered:
            defer { isShown = false }
            guard canShow, isShown else { return nil }
            return DesktopNotification(
                slot: Self.slot, summary: "syncupsd saves your sync-ups again",
                body: "what could not be written is written now", urgency: .normal)
        default:
            return nil
        }
    }
}
