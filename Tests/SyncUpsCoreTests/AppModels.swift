import Foundation
import SyncUpsCore

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

extension App.SyncUp {
    /// The app's value for one of ours, field by field.
    init(_ syncUp: SyncUpsCore.SyncUp) {
        self.init(
            id: syncUp.id.rawValue,
            attendees: syncUp.attendees.map { App.Attendee(id: $0.id.rawValue, name: $0.name) },
            duration: syncUp.duration,
            meetings: syncUp.meetings.map {
                App.Meeting(id: $0.id.rawValue, date: $0.date, transcript: $0.transcript)
            },
            theme: syncUp.theme.rawValue,
            title: syncUp.title
        )
    }
}

extension App {
    /// What the app's Debug build writes for `syncUps`: Foundation's `JSONEncoder` with
    /// `[.prettyPrinted, .sortedKeys]`, the oracle for our writer.
    static func debugFile(_ syncUps: [SyncUpsCore.SyncUp]) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return [UInt8](try encoder.encode(syncUps.map(App.SyncUp.init)))
    }
}
