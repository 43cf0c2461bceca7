import CSyncUpsShims
import Glibc

/// A child process started with `posix_spawn`, with optional pipes to its standard streams.
///
/// The child starts with an empty signal mask and default dispositions whatever the parent blocks, and
/// inherits no descriptor but the ones mapped here (every one above the highest mapped number is closed in the
/// child, whatever its close-on-exec flag).
public final class Subprocess: Sendable {
    /// What a child's standard stream is connected to.
    public enum Stream: Sendable {
        /// The parent's own stream.
        case inherit
        /// A new pipe; the parent's end is in `standardInput`/`standardOutput`/`standardError`.
        case pipe
        /// /dev/null.
        case null
        /// This descriptor of the parent's.
        case descriptor(FileDescriptor)
    }

    /// How a child ended.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        case exited(CInt)
        case signaled(CInt)

        public var description: String {
            switch self {
            case .exited(let code): "exited with status \(code)"
            case .signaled(let signal): "killed by signal \(signal) (\(String(cString: strsignal(signal))))"
            }
        }
    }

    /// How far a child's end takes what it started with it.
    public enum Containment: Sendable, Equatable {
        /// Nothing: the child is one more process of this one's group.
        case none
        /// Its own process group (`send(_:toGroup:)` reaches all of it).
        case processGroup
        /// Its own process group, SIGKILLed when the thread that started it exits (PR_SET_PDEATHSIG, so even
        /// when this process is SIGKILLed), and, where the kernel lets this process create a user namespace,
        /// init of its own PID namespace: when it ends, the kernel kills everything it started, however it
        /// detached (`setsid`, a double fork). `isContained` says whether it got the namespace.
        case supervised
    }

    public let pid: pid_t
    /// Whether the child is init of its own PID namespace (`Containment.supervised` where the kernel allows).
    public let isContained: Bool
    /// The parent's end of the child's stdin pipe (write to it), when `.pipe` was asked for.
    public let standardInput: FileDescriptor?
    /// The parent's end of the child's stdout pipe (read from it).
    public let standardOutput: FileDescriptor?
    /// The parent's end of the child's stderr pipe (read from it).
    public let standardError: FileDescriptor?

    /// Starts `executable` (a path; searched in `PATH` when it has no slash) with `arguments` (not including
    /// argv[0]). `extraDescriptors` maps parent descriptors to numbers in the child (e.g. a control pipe at 3).
    public init(
        executable: String,
        arguments: [String] = [],
        environment: [String: String]? = nil,
        standardInput stdinMode: Stream = .inherit,
        standardOutput stdoutMode: Stream = .inherit,
        standardError stderrMode: Stream = .inherit,
        extraDescriptors: [(parent: FileDescriptor, child: CInt)] = [],
        containment: Containment = .none
    ) throws(SystemError) {
        var parentEnds: [FileDescriptor?] = [nil, nil, nil]
        var childEnds: [FileDescriptor] = []  // closed in the parent after the spawn
        var dups: [CInt] = []
        var nullFD: FileDescriptor?
        defer {
            for fd in childEnds { fd.close() }
            nullFD?.close()
        }
        do throws(SystemError) {
            for (index, mode) in [stdinMode, stdoutMode, stderrMode].enumerated() {
                switch mode {
                case .inherit: break
                case .null:
                    if nullFD == nil { nullFD = try FileDescriptor.open("/dev/null", O_RDWR) }
                    dups += [nullFD!.rawValue, CInt(index)]
                case .descriptor(let fd): dups += [fd.rawValue, CInt(index)]
                case .pipe:
                    let (readEnd, writeEnd) = try FileDescriptor.pipe()
                    if index == 0 {
                        parentEnds[0] = writeEnd
                        childEnds.append(readEnd)
                        dups += [readEnd.rawValue, 0]
                    } else {
                        parentEnds[index] = readEnd
                        childEnds.append(writeEnd)
                        dups += [writeEnd.rawValue, CInt(index)]
                    }
                }
            }
            for (parent, child) in extraDescriptors { dups += [parent.rawValue, child] }
            // The child's descriptors are made by dup2 in order, so a source that is also a target would be
            // overwritten before it is used, or (dup2 onto itself) keep its close-on-exec flag and vanish in
            // the child. Such a source moves to a spare number above every target first; `syncups_spawn` relies
            // on it.
            let targets = Set(stride(from: 1, to: dups.count, by: 2).map { dups[$0] })
            for index in stride(from: 0, to: dups.count, by: 2) where targets.contains(dups[index]) {
                let spare = FileDescriptor(
                    rawValue: try syscall("fcntl(F_DUPFD_CLOEXEC)") {
                        fcntl(dups[index], F_DUPFD_CLOEXEC, (targets.max() ?? 2) + 1)
                    })
                childEnds.append(spare)
                dups[index] = spare.rawValue
            }

            let path = executable.contains("/") ? executable : Self.search(executable, environment: environment)
            var pid: pid_t = 0
            var contained: CInt = 0
            let argv = [executable] + arguments
            let envp = (environment ?? Self.currentEnvironment()).map { "\($0.key)=\($0.value)" }
            let result = Self.withCStrings(argv) { argvPointer in
                Self.withCStrings(envp) { envpPointer in
                    switch containment {
                    case .none, .processGroup:
                        syncups_spawn(
                            &pid, path, argvPointer, envpPointer, dups, CInt(dups.count / 2),
                            containment == .processGroup ? 1 : 0)
                    case .supervised:
                        syncups_spawn_supervised(
                            &pid, path, argvPointer, envpPointer, dups, CInt(dups.count / 2), 1, &contained)
                    }
                }
            }
            guard result == 0 else { throw SystemError("posix_spawn(\(executable))", Errno(rawValue: result)) }
            self.pid = pid
            self.isContained = contained != 0
        } catch {
            for fd in parentEnds.compactMap({ $0 }) { fd.close() }
            throw error
        }
        standardInput = parentEnds[0]
        standardOutput = parentEnds[1]
        standardError = parentEnds[2]
    }

    /// Closes the parent's ends of the pipes (closing stdin tells the child its input ended).
    public func closeStreams() {
        standardInput?.close()
        standardOutput?.close()
        standardError?.close()
    }

    /// Sends `signal` to the child (or to its whole process group when it has its own).
    public func send(_ signal: CInt, toGroup: Bool = false) {
        kill(toGroup ? -pid : pid, signal)
    }

    /// Waits for the child to end and reaps it.
    public func wait() -> Termination {
        var status: CInt = 0
        _ = retryingInterrupts { waitpid(pid, &status, 0) }
        return Self.termination(status)
    }

    /// Whether the child has ended, without reaping it (it stays a zombie, so its pid and process group
    /// cannot be reused while its group is signalled).
    public var hasEnded: Bool {
        var info = siginfo_t()
        guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 else { return true }
        return info.si_signo == SIGCHLD
    }

    /// Reaps the child if it has ended, without waiting.
    public func poll() -> Termination? {
        var status: CInt = 0
        let result = waitpid(pid, &status, WNOHANG)
        return result == pid ? Self.termination(status) : nil
    }

    static func termination(_ status: CInt) -> Termination {
        if status & 0x7F == 0 { return .exited((status >> 8) & 0xFF) }
        return .signaled(status & 0x7F)
    }

    // MARK: - Helpers

    public static func currentEnvironment() -> [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
        }
        return result
    }

    static func search(_ name: String, environment: [String: String]?) -> String {
        let path = (environment ?? currentEnvironment())["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = FilePath.join(String(directory), name)
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return name
    }

    public static func withCStrings<Result>(
        _ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Result
    ) -> Result {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
