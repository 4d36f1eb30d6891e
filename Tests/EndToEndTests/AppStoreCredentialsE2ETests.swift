import Foundation
import JSON
import XCTest

/// App Store credentials over the real `bouncer` process, real OpenSSL and real PostgreSQL: keys made by the
/// `openssl` CLI as App Store Connect makes them, stored through the admin API and the CLI, never readable back
/// (not from any response, CLI output, log line, /metrics or a `pg_dump` of the database), and re-encrypted
/// across two rotations of `BOUNCER_ENCRYPTION_KEY`.
final class AppStoreCredentialsE2ETests: XCTestCase {
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"

    // MARK: Helpers (openssl, sha256sum, pg_dump)

    /// Runs a tool to completion; stdout as bytes, stderr as text.
    @discardableResult
    static func tool(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws
        -> (status: Int32, stdout: Data, stderr: String)
    {
        try ProcessRun.run(URL(fileURLWithPath: path), arguments, environment: environment)
    }

    static func openssl(_ arguments: [String]) throws -> Data {
        let r = try tool("/usr/bin/env", ["openssl"] + arguments)
        guard r.status == 0 else { throw HarnessFailure(description: "openssl \(arguments) failed: \(r.stderr)") }
        return r.stdout
    }

    /// A fresh working directory for keys.
    static func scratch() throws -> URL {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("bouncer-creds-e2e-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// A key as App Store Connect's `.p8` holds it: EC P-256, PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    struct P8 {
        let url: URL
        let pem: String
        /// The PEM's base64 lines and their concatenation.
        var bodyLines: [String] {
            pem.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("-----") && !$0.isEmpty }
        }
        var body: String { bodyLines.joined() }
        /// The PKCS#8 DER and the 32-byte private scalar inside it (after `02 01 01 04 20` of the ECPrivateKey).
        var der: [UInt8] { Array(Data(base64Encoded: body) ?? Data()) }
        var scalar: [UInt8] {
            let marker: [UInt8] = [0x02, 0x01, 0x01, 0x04, 0x20]
            let d = der
            guard d.count >= marker.count + 32 else { return [] }
            for i in 0...(d.count - marker.count - 32) where Array(d[i..<(i + marker.count)]) == marker {
                return Array(d[(i + marker.count)..<(i + marker.count + 32)])
            }
            return []
        }
        /// `openssl pkey -pubout -outform DER | sha256sum`: what Bouncer must call the fingerprint.
        func fingerprint(in dir: URL) throws -> String {
            let pub = dir.appendingPathComponent(url.lastPathComponent + ".pub.der")
            _ = try openssl(["pkey", "-in", url.path, "-pubout", "-outform", "DER", "-out", pub.path])
            return try sha256(pub)
        }
    }

    static func generate(_ name: String, in dir: URL, algorithm: [String] = ["-algorithm", "EC", "-pkeyopt",
                                                                             "ec_paramgen_curve:P-256"]) throws -> P8 {
        let url = dir.appendingPathComponent(name)
        _ = try openssl(["genpkey"] + algorithm + ["-out", url.path])
        return P8(url: url, pem: try String(contentsOf: url, encoding: .utf8))
    }

    static func sha256(_ file: URL) throws -> String {
        let r = try tool("/usr/bin/env", ["sha256sum", file.path])
        return String(String(decoding: r.stdout, as: UTF8.self).prefix(64))
    }

    /// 32 random bytes in base64 (what `openssl rand -base64 32` prints) and the key id Bouncer records for them.
    static func encryptionKey(in dir: URL) throws -> (base64: String, id: String) {
        let text = String(decoding: try openssl(["rand", "-base64", "32"]), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let raw = dir.appendingPathComponent("key-\(UInt32.random(in: 0...UInt32.max)).bin")
        try Data(base64Encoded: text)?.write(to: raw)
        return (text, String(try sha256(raw).prefix(16)))
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// The newest PostgreSQL's `pg_dump` (the same tools the test cluster runs on), else the one on PATH.
    static func pgDumpPath() -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap(Int.init).sorted(by: >)
        for version in versions where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/pg_dump") {
            return "\(root)/\(version)/bin/pg_dump"
        }
        return "/usr/bin/pg_dump"  // Debian's wrapper, which picks the cluster's version
    }

    func credentialsPath(_ tenant: Tenant) -> String { "/v1/admin/projects/\(tenant.id)/app-store-credentials" }

    func body(_ keyId: String, _ pem: String, issuer: String = AppStoreCredentialsE2ETests.issuerId) -> JSONValue {
        ["issuer_id": .string(issuer), "key_id": .string(keyId), "private_key": .string(pem)]
    }

    /// Environment for a CLI run against `db` with the given encryption keys.
    func cliEnvironment(_ db: E2EDatabase, key: String?, previous: String? = nil) -> [String: String] {
        BouncerProcess.environment(databaseURL: db.url, overrides: [
            "BOUNCER_ENCRYPTION_KEY": key, "BOUNCER_ENCRYPTION_KEY_PREVIOUS": previous,
        ])
    }

    func row(_ db: E2EDatabase, _ tenant: Tenant) throws -> (keyId: String, sealedBytes: Int)? {
        let rows = try db.query("""
            SELECT encryption_key_id, octet_length(sealed_private_key)::int8 AS n FROM app_store_credentials
            WHERE project_id = \(tenant.id)::uuid
            """)
        guard let first = rows.first else { return nil }
        return (try first.decode("encryption_key_id", as: String.self), Int(try first.decode("n", as: Int64.self)))
    }

    /// No text Bouncer produced (`seen`, its log, `/metrics`) nor a plain `pg_dump` of its database holds any part
    /// of the private keys (PEM lines, base64 body, DER, the raw scalar in hex, base64 or raw) or an encryption key.
    func assertNothingHoldsTheKeys(_ secrets: [P8], _ keys: [(base64: String, id: String)], seen: [String],
                                   server: BouncerProcess, db: E2EDatabase,
                                   file: StaticString = #filePath, line: UInt = #line) throws {
        var texts = seen
        texts.append(try server.client.get("/metrics").text)
        texts.append(server.stderr)
        let dump = try Self.tool(Self.pgDumpPath(), ["--dbname", db.url, "--no-owner"])
        XCTAssertEqual(dump.status, 0, dump.stderr, file: file, line: line)
        let dumpText = String(decoding: dump.stdout, as: UTF8.self)
        XCTAssertTrue(dumpText.contains("COPY public.app_store_credentials") && dumpText.contains(Self.issuerId),
                      "the dump covers the credentials row", file: file, line: line)
        texts.append(dumpText)
        for secret in secrets {
            // bytea dumps as hex: the PEM's text bytes in hex too, not only the DER's.
            let needles = secret.bodyLines + secret.bodyLines.map { Self.hex(Array($0.utf8)) }
                + [secret.body, Self.hex(secret.der), Self.hex(secret.scalar), Data(secret.scalar).base64EncodedString()]
            for text in texts {
                for needle in needles where text.contains(needle) {
                    XCTFail("key material (\(needle.prefix(12))…) readable back", file: file, line: line)
                }
            }
            XCTAssertNil(dump.stdout.range(of: Data(secret.scalar)), "raw scalar in the dump", file: file, line: line)
            XCTAssertNil(dump.stdout.range(of: Data(secret.der)), "raw DER in the dump", file: file, line: line)
        }
        for key in keys where texts.contains(where: { $0.contains(key.base64) }) {
            XCTFail("an encryption key was printed", file: file, line: line)
        }
    }

    // MARK: Tests

    func testCredentialsAreStoredSealedNeverReadBackAndSurviveTwoKeyRotations() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keyA = try Self.encryptionKey(in: dir), keyB = try Self.encryptionKey(in: dir)
        let keyC = try Self.encryptionKey(in: dir)
        let p8 = try Self.generate("AuthKey_2X9R4HXF34.p8", in: dir)
        let p8b = try Self.generate("AuthKey_ABCDEFGHIJ.p8", in: dir)
        XCTAssertTrue(p8.pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"), "openssl makes what App Store Connect does")
        XCTAssertEqual(p8.scalar.count, 32, "found the private scalar in the DER")
        let secrets = [p8, p8b]

        let (db, server, api) = try ownServer(label: "creds", overrides: [
            "BOUNCER_ENCRYPTION_KEY": keyA.base64, "BOUNCER_ACCESS_LOG": "on",
        ])
        let tenant = try api.createProject()
        let path = credentialsPath(tenant)
        var seen: [String] = []  // every text Bouncer produced: none may carry a key

        // PUT: 200 with the metadata and the fingerprint openssl computes.
        let put = try server.client.send("PUT", path, json: body("2X9R4HXF34", p8.pem,
                                                                 issuer: Self.issuerId.uppercased()), headers: E2E.admin)
        seen.append(put.text)
        XCTAssertEqual(put.status, 200, put.description)
        let shown = try put.json()
        XCTAssertEqual(shown.objectValue?.keys, ["issuer_id", "key_id", "key_fingerprint", "created_at", "updated_at"])
        XCTAssertEqual(shown["issuer_id"], .string(Self.issuerId))
        XCTAssertEqual(shown["key_id"], "2X9R4HXF34")
        XCTAssertEqual(shown["key_fingerprint"], .string(try p8.fingerprint(in: dir)))
        XCTAssertEqual(shown["created_at"], shown["updated_at"])
        let get = try server.client.get(path, headers: E2E.admin)
        seen.append(get.text)
        XCTAssertEqual(get.status, 200)
        XCTAssertEqual(try get.json(), shown)
        // Sealed under key A: version byte, 12-byte nonce, the PEM's bytes, 16-byte tag.
        let stored = try XCTUnwrap(try row(db, tenant))
        XCTAssertEqual(stored.keyId, keyA.id)
        XCTAssertEqual(stored.sealedBytes, 1 + 12 + p8.pem.utf8.count + 16)

        // Keys that are not App Store Connect's: refused by the real checks, never echoed.
        let sec1 = dir.appendingPathComponent("sec1.pem")
        _ = try Self.openssl(["ec", "-in", p8.url.path, "-out", sec1.path])
        let rsa = try Self.generate("rsa.p8", in: dir, algorithm: ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"])
        let p384 = try Self.generate("p384.p8", in: dir, algorithm: ["-algorithm", "EC", "-pkeyopt",
                                                                      "ec_paramgen_curve:P-384"])
        var damaged = p8.pem
        damaged.replaceSubrange(damaged.range(of: p8.bodyLines[1]) ?? damaged.startIndex..<damaged.startIndex,
                                with: String(repeating: "A", count: p8.bodyLines[1].count))
        let rejected: [(String, String)] = [
            (try String(contentsOf: sec1, encoding: .utf8), "Expected a PKCS#8 PEM (BEGIN PRIVATE KEY), got a SEC1 EC "
                + "key (BEGIN EC PRIVATE KEY); send the .p8 file unchanged"),
            (rsa.pem, "Expected an EC key on P-256 (prime256v1); App Store Connect's In-App Purchase keys are P-256"),
            (p384.pem, "Expected an EC key on P-256 (prime256v1); App Store Connect's In-App Purchase keys are P-256"),
            (damaged, "Not a readable PKCS#8 private key (damaged base64, or an encrypted key); send the .p8 file unchanged"),
        ]
        for (pem, message) in rejected {
            let r = try server.client.send("PUT", path, json: body("2X9R4HXF34", pem), headers: E2E.admin)
            seen.append(r.text)
            assertError(r, 400, "VALIDATION_ERROR")
            let details = try r.json()["details"]?.arrayValue ?? []
            XCTAssertEqual(details.map { $0["path"] }, [["private_key"]], r.description)
            XCTAssertEqual(details.first?["message"]?.stringValue, message, r.description)
            XCTAssertTrue(try r.json()["suggestion"]?.stringValue?.contains(".p8") ?? false)
        }
        XCTAssertEqual(try row(db, tenant)?.keyId, keyA.id, "a refused PUT changes nothing")

        // The CLI shows exactly what the API shows, and sets through the same use case.
        let show = try CLIRun.run(["project", "credentials", "show", tenant.id], environment: cliEnvironment(db, key: keyA.base64))
        seen += [show.stdout, show.stderr]
        XCTAssertEqual(show.status, 0, show.stderr)
        XCTAssertEqual(try JSONParser.parse(Array(show.stdout.utf8)), shown)
        let set = try CLIRun.run(["project", "credentials", "set", tenant.id, "--issuer-id", Self.issuerId,
                                  "--key-id", "ABCDEFGHIJ", "--private-key-file", p8b.url.path],
                                 environment: cliEnvironment(db, key: keyA.base64))
        seen += [set.stdout, set.stderr]
        XCTAssertEqual(set.status, 0, set.stderr)
        let setJSON = try JSONParser.parse(Array(set.stdout.utf8))
        XCTAssertEqual(setJSON["key_id"], "ABCDEFGHIJ")
        XCTAssertEqual(setJSON["key_fingerprint"], .string(try p8b.fingerprint(in: dir)))
        XCTAssertEqual(setJSON["created_at"], shown["created_at"], "replacing keeps created_at")
        let badSet = try CLIRun.run(["project", "credentials", "set", tenant.id, "--issuer-id", "nope", "--key-id", "x",
                                     "--private-key-file", rsa.url.path], environment: cliEnvironment(db, key: keyA.base64))
        seen += [badSet.stdout, badSet.stderr]
        XCTAssertEqual(badSet.status, 2, badSet.stderr)
        XCTAssertTrue(badSet.stderr.contains("  issuer_id: Invalid uuid\n"), badSet.stderr)
        XCTAssertTrue(badSet.stderr.contains("  key_id: Must be 10 characters: uppercase letters and digits\n"), badSet.stderr)
        XCTAssertTrue(badSet.stderr.contains("  private_key: Expected an EC key on P-256"), badSet.stderr)

        // Nothing anywhere holds the key: responses, CLI output, the server's log, /metrics, a database dump.
        try assertNothingHoldsTheKeys(secrets, [keyA], seen: seen, server: server, db: db)
        XCTAssertTrue(server.stderr.contains("App Store credentials seal under key \(keyA.id)"), server.stderr)

        // Rotation 1: B current, A previous: re-encrypt moves the value to B.
        let r1 = try CLIRun.run(["credentials", "reencrypt"], environment: cliEnvironment(db, key: keyB.base64, previous: keyA.base64))
        seen += [r1.stdout, r1.stderr]
        XCTAssertEqual(r1.status, 0, r1.stderr)
        XCTAssertEqual(try JSONParser.parse(Array(r1.stdout.utf8)),
                       ["reencrypted": 1, "already_current": 0, "changed_concurrently": 0, "failed": []])
        XCTAssertTrue(r1.stderr.contains("project \(tenant.id): re-encrypted (key \(keyA.id) -> \(keyB.id))"), r1.stderr)
        XCTAssertEqual(try row(db, tenant)?.keyId, keyB.id)
        // Rotation 2: C current, B previous: opening under B works (the value really moved), now under C.
        let r2 = try CLIRun.run(["credentials", "reencrypt"], environment: cliEnvironment(db, key: keyC.base64, previous: keyB.base64))
        seen += [r2.stdout, r2.stderr]
        XCTAssertEqual(r2.status, 0, r2.stderr)
        XCTAssertEqual(try JSONParser.parse(Array(r2.stdout.utf8))["reencrypted"], 1)
        XCTAssertEqual(try row(db, tenant)?.keyId, keyC.id)
        let again = try CLIRun.run(["credentials", "reencrypt"], environment: cliEnvironment(db, key: keyC.base64))
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertEqual(try JSONParser.parse(Array(again.stdout.utf8))["already_current"], 1)
        // A server key that never sealed it (A, without C as previous): reported, exit 1, nothing changed.
        let lost = try CLIRun.run(["credentials", "reencrypt"], environment: cliEnvironment(db, key: keyA.base64))
        seen += [lost.stdout, lost.stderr]
        XCTAssertEqual(lost.status, 1, lost.stderr)
        let failed = try JSONParser.parse(Array(lost.stdout.utf8))["failed"]?.arrayValue ?? []
        XCTAssertEqual(failed.map { $0["project_id"] }, [.string(tenant.id)])
        XCTAssertTrue(failed.first?["reason"]?.stringValue?.hasPrefix("ENCRYPTION_KEY_UNKNOWN: Sealed under encryption key \(keyC.id)") ?? false,
                      lost.stdout)
        XCTAssertEqual(try row(db, tenant)?.keyId, keyC.id)

        // The same, after the rotations: every output since is clean too, and the dump of the rotated rows.
        try assertNothingHoldsTheKeys(secrets, [keyA, keyB, keyC], seen: seen, server: server, db: db)

        // DELETE: 204, then 404; deleting the project deletes its credentials.
        let deleted = try server.client.delete(path, headers: E2E.admin)
        XCTAssertEqual(deleted.status, 204, deleted.description)
        assertError(try server.client.get(path, headers: E2E.admin), 404, "APP_STORE_CREDENTIALS_NOT_FOUND")
        XCTAssertEqual(try server.client.send("PUT", path, json: body("2X9R4HXF34", p8.pem), headers: E2E.admin).status, 200)
        XCTAssertEqual(try server.client.delete("/v1/admin/projects/\(tenant.id)", headers: E2E.admin).status, 204)
        XCTAssertEqual(try db.count("app_store_credentials"), 0)
        server.stopAndAssertCleanExit()
    }

    func testWithoutAnEncryptionKeyStoringIsRefusedAndBadKeysStopStartup() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let p8 = try Self.generate("AuthKey.p8", in: dir)
        let db = try E2EDatabase(label: "credsnokey")
        let server = try BouncerProcess(databaseURL: db.url)
        let tenant = try API(client: server.client).createProject()
        let r = try server.client.send("PUT", credentialsPath(tenant), json: body("2X9R4HXF34", p8.pem), headers: E2E.admin)
        assertError(r, 409, "ENCRYPTION_KEY_MISSING",
                    error: "App Store credentials cannot be stored: the server has no encryption key.",
                    suggestion: "Set BOUNCER_ENCRYPTION_KEY on the server to 32 random bytes in base64 "
                        + "(generate one with `openssl rand -base64 32`, keep it in your secret store) and restart.")
        XCTAssertNil(r.header("Retry-After"))
        XCTAssertEqual(try db.count("app_store_credentials"), 0)
        XCTAssertTrue(server.stderr.contains("BOUNCER_ENCRYPTION_KEY is unset: storing App Store credentials is refused"),
                      server.stderr)
        server.stopAndAssertCleanExit()

        let cli = try CLIRun.run(["project", "credentials", "set", tenant.id, "--issuer-id", Self.issuerId,
                                  "--key-id", "2X9R4HXF34", "--private-key-file", p8.url.path],
                                 environment: cliEnvironment(db, key: nil))
        XCTAssertEqual(cli.status, 1, cli.stderr)
        XCTAssertTrue(cli.stderr.contains("ENCRYPTION_KEY_MISSING") && cli.stderr.contains("openssl rand -base64 32"),
                      cli.stderr)

        // Invalid keys stop `serve` (and every CLI command) with exit 2, never echoing the value.
        let zero = Data(count: 32).base64EncodedString()
        let cases: [([String: String?], String)] = [
            (["BOUNCER_ENCRYPTION_KEY": "c2hvcnQ="], "BOUNCER_ENCRYPTION_KEY=<redacted>: must be 32 random bytes in "
                + "base64 (it decodes to 5 bytes); generate one with `openssl rand -base64 32`"),
            (["BOUNCER_ENCRYPTION_KEY": "not base64!"], "BOUNCER_ENCRYPTION_KEY=<redacted>: must be 32 random bytes in "
                + "base64 (this is not base64); generate one with `openssl rand -base64 32`"),
            (["BOUNCER_ENCRYPTION_KEY": zero], "BOUNCER_ENCRYPTION_KEY=<redacted>: is a placeholder (every byte the "
                + "same), not a random key; generate one with `openssl rand -base64 32`"),
            (["BOUNCER_ENCRYPTION_KEY_PREVIOUS": try Self.encryptionKey(in: dir).base64],
             "BOUNCER_ENCRYPTION_KEY_PREVIOUS is set without BOUNCER_ENCRYPTION_KEY"),
        ]
        for (overrides, message) in cases {
            let run = try CLIRun.run(["serve"], environment: BouncerProcess.environment(databaseURL: db.url,
                                                                                        overrides: overrides))
            XCTAssertEqual(run.status, 2, run.stderr)
            XCTAssertTrue(run.stderr.contains(message), run.stderr)
            for value in overrides.values.compactMap({ $0 }) { XCTAssertFalse(run.stderr.contains(value), run.stderr) }
        }
    }

    func testASealedValueOpensOnlyInItsOwnRowAndTamperingIsCaught() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keyA = try Self.encryptionKey(in: dir), keyB = try Self.encryptionKey(in: dir)
        let (db, server, api) = try ownServer(label: "credsbind", overrides: ["BOUNCER_ENCRYPTION_KEY": keyA.base64])
        let first = try api.createProject(), second = try api.createProject(), third = try api.createProject()
        for (tenant, name) in [(first, "one.p8"), (second, "two.p8"), (third, "three.p8")] {
            let p8 = try Self.generate(name, in: dir)
            let r = try server.client.send("PUT", credentialsPath(tenant), json: body("2X9R4HXF34", p8.pem), headers: E2E.admin)
            XCTAssertEqual(r.status, 200, r.description)
        }
        server.stopAndAssertCleanExit()
        // Someone with database access moves the first project's sealed key into the second's row, and flips one
        // byte of the third's ciphertext. Neither opens: the project id is authenticated data, and GCM's tag covers
        // every byte.
        _ = try db.query("""
            UPDATE app_store_credentials SET sealed_private_key =
                (SELECT sealed_private_key FROM app_store_credentials WHERE project_id = \(first.id)::uuid)
            WHERE project_id = \(second.id)::uuid
            """)
        _ = try db.query("""
            UPDATE app_store_credentials SET sealed_private_key = set_byte(sealed_private_key, 20,
                get_byte(sealed_private_key, 20) # 1)
            WHERE project_id = \(third.id)::uuid
            """)
        let run = try CLIRun.run(["credentials", "reencrypt"],
                                 environment: cliEnvironment(db, key: keyB.base64, previous: keyA.base64))
        XCTAssertEqual(run.status, 1, run.stderr)
        let summary = try JSONParser.parse(Array(run.stdout.utf8))
        XCTAssertEqual(summary["reencrypted"], 1, run.stdout)
        let failed = summary["failed"]?.arrayValue ?? []
        XCTAssertEqual(Set(failed.compactMap { $0["project_id"]?.stringValue }), [second.id, third.id], run.stdout)
        for failure in failed {
            XCTAssertEqual(failure["reason"]?.stringValue,
                           "SEALED_SECRET_CORRUPT: A sealed value under key \(keyA.id) does not authenticate.")
        }
        XCTAssertEqual(try row(db, first)?.keyId, keyB.id)
        XCTAssertEqual(try row(db, second)?.keyId, keyA.id, "left as it was")
        XCTAssertEqual(try row(db, third)?.keyId, keyA.id, "left as it was")
    }
}
