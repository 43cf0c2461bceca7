import Foundation

/// The SyncUps app's models with their synthesized `Codable`, to encode and decode exactly as the app does.
/// (`Tagged<Self, UUID>` and `IdentifiedArrayOf<T>` encode as a bare `UUID` and a bare array.)
enum App {
    struct SyncUp: Codable, Equatable {
        let id: UUID
        var attendees: [Attendee]
        var duration: Duration
        var meetings: [Meeting]
        var theme: String
        var title: String
    }

    struct Attendee: Codable, Equatable {
        let id: UUID
        var name: String
    }

    struct Meeting: Codable, Equatable {
        let id: UUID
        let date: Date
        var transcript: String
    }
}
