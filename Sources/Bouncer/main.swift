import Foundation
print("bouncer: skeleton")
