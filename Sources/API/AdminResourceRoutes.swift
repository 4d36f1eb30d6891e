import Domain
import HTTPCore

extension APIRoute {
    /// The admin routes of a project's single resource at `path`: `PUT` stores it, `GET` shows it, `DELETE`
    /// removes it, all under the same error context; reading needs `projects.read`, changing needs `write`.
    static func adminResource(
        _ path: String, write: Permission, errors: ErrorContext,
        put: @escaping @Sendable (Request) throws -> Response, get: @escaping @Sendable (Request) throws -> Response,
        delete: @escaping @Sendable (Request) throws -> Response
    ) -> [APIRoute] {
        [
            APIRoute(.put, path, .adminAPI, access: .admin(write), errors: errors, put),
            APIRoute(.get, path, .adminAPI, access: .admin(.projectsRead), errors: errors, get),
            APIRoute(.delete, path, .adminAPI, access: .admin(write), errors: errors, delete),
        ]
    }
}
