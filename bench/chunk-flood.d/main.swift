// Compiled into module HTTPCore by bench/chunk-flood: the real HTTP server with its default limits and
// one POST route, so the flood measures HTTPCore alone (no database). Prints the port, then serves.
import Foundation

var configuration = HTTPServer.Configuration()
configuration.port = 0
configuration.eventLoopCount = 2
configuration.workerCount = 2
var router = Router()
router.add(.post, "/echo") { request in .json(200, Array("{\"bytes\":\(request.body.count)}".utf8)) }
let server = HTTPServer(configuration: configuration, router: router, accessLog: nil)
let port = try server.start()
print("listening on \(port)")
fflush(stdout)
while true { sleep(3600) }
