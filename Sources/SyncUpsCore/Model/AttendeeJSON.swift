import SyncUpsJSON

extension Attendee {
    /// `{"id":"…","name":"…"}`: how every file and message of syncupsd (and the app's file) writes an attendee.
    public var json: JSONValue {
        ["id": .string(id.description), "name": .string(name)]
    }

    /// Reads what `json` wrote, leniently (a missing name is empty), for the daemon's own side files; nil
    /// without a valid id. `sync-ups.json` is read strictly by `SyncUpsFile` instead.
    public init?(json: JSONValue) {
        guard let id = json["id"]?.stringValue.flatMap(ID.init(uuidString:)) else { return nil }
        self.init(id: id, name: json["name"]?.stringValue ?? "")
    }
}
