import Foundation

/// What `openapi.yaml` says each admin operation requires: its `x-permission` (read by `APITests.AccessControlTests`,
/// which holds it to the routes' declarations, and by the end-to-end walk of every admin route).
public enum OpenAPIPermissions {
    /// `METHOD /path/{param}` → `x-permission` of every operation that has one (the keys indented by 6 under a
    /// method, under `paths:`).
    public static func permissions(inOpenAPI text: String) -> [String: String] {
        let methods: Set<String> = ["get", "put", "post", "delete", "patch"]
        var out: [String: String] = [:]
        var inPaths = false
        var path: String?
        var operation: String?
        for line in text.split(separator: "\n") {
            if !line.hasPrefix(" ") {
                inPaths = line == "paths:"
                continue
            }
            guard inPaths else { continue }
            let indent = line.prefix { $0 == " " }.count
            let key = line.drop { $0 == " " }
            if indent == 2, key.hasSuffix(":") {
                path = String(key.dropLast())
            } else if indent == 4, key.hasSuffix(":"), methods.contains(String(key.dropLast())), let path {
                operation = key.dropLast().uppercased() + " " + path
            } else if indent == 4 {
                operation = nil
            } else if indent == 6, key.hasPrefix("x-permission: "), let operation {
                out[operation] = String(key.dropFirst("x-permission: ".count))
            }
        }
        return out
    }
}
