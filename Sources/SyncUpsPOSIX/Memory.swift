import CSyncUpsShims

/// Process memory housekeeping.
public enum Memory {
    /// Returns freed heap pages to the system (`malloc_trim`), after releasing something large such as a
    /// speech model, so an idle daemon's resident size drops back.
    public static func releaseFreePages() {
        malloc_trim(0)
    }
}
