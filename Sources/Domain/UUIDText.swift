public import Foundation
import Primitives

extension UUID {
    /// The id as the API, the database and Apple write it: lowercase 8-4-4-4-12 (`uuidString` is uppercase). The one
    /// author of that text (`Hex.uuidText`), which also costs a fraction of `uuidString.lowercased()`.
    public var lowercasedText: String {
        withUnsafeBytes(of: uuid) { Hex.uuidText($0) }
    }
}
