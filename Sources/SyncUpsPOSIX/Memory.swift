import CSyncUpsShims

/// Process memory housekeeping.
public enum Memory {
    /// Returns freed heap pages to the system (`malloc_trim`), after releasing something large such as a
    /// speech model, so an idle daemon's resident size drops back.
    public static func releaseFreePages() {
        malloc_trim(0)
    }

    /// Makes every allocation of 128 KiB and more a mapping of its own, returned to the system when freed
    /// (`mallopt(M_MMAP_THRESHOLD)`). By default glibc raises that threshold to the size of each such block
    /// freed, so after the first the big buffers come from the heap, and freeing them keeps their pages: 300
    /// idle connections that had each pipelined 1,500 `status` lines held 77 MB, 29 MB with this. Buffers
    /// reused from batch to batch (the server's spare) are not freed, so this costs the request path no mmap.
    public static func mapLargeBlocksSeparately() {
        _ = mallopt(M_MMAP_THRESHOLD, 128 * 1024)
    }
}
