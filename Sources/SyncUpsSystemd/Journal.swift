import CSystemd
import Glibc
import SyncUpsPOSIX

/// Logging to the systemd journal with priorities and structured fields (`sd_journal_sendv`).
public enum Journal {
    /// True when standard error is connected to the journal: `$JOURNAL_STREAM` (set by systemd as
    /// `device:inode`) names the same file as descriptor 2.
    public static func isStandardErrorJournal(environment: [String: String]) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(2, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    /// A logger that sends each message as one journal entry: `MESSAGE=`, `PRIORITY=`,
    /// `SYSLOG_IDENTIFIER=syncupsd`, and the message's fields (`SYNCUPS_SYNCUP_ID=…`).
    public static func logger(minimumLevel: Logger.Level, identifier: String = "syncupsd") -> Logger {
        Logger(minimumLevel: minimumLevel) { level, message, fields in
            var entries = [
                "MESSAGE=" + message,
                "PRIORITY=\(level.rawValue)",
                "SYSLOG_IDENTIFIER=" + identifier,
            ]
            entries += fields.map { "\($0.journalName)=\($0.value)" }
            send(entries)
        }
    }

    static func send(_ entries: [String]) {
        // Each field is copied once into C memory that stays put for the call.
        let copies: [(pointer: UnsafeMutablePointer<CChar>?, length: Int)] = entries.map { (strdup($0), $0.utf8.count) }
        defer { for copy in copies { free(copy.pointer) } }
        let vectors = copies.map { iovec(iov_base: UnsafeMutableRawPointer($0.pointer), iov_len: $0.length) }
        _ = vectors.withUnsafeBufferPointer { sd_journal_sendv($0.baseAddress, CInt($0.count)) }
    }
}
