// SPDX-License-Identifier: MIT
import FoundationEssentials
import MoqQUIC

/// A self-signed certificate and its key written to a private temporary directory (removed on deinit), so
/// that a restarted relay presents the same certificate and clients keep their pin.
final class CertificateFiles: Sendable {
    let directory: String
    let certificate: String
    let privateKey: String

    init(names: [String]) throws(TestKitError) {
        let pem: (certificate: String, privateKey: String)
        do { pem = try ServerIdentity.generateSelfSignedPEM(names: names) } catch {
            throw .relay("cannot generate a certificate: \(error)")
        }
        let base = FileManager.default.temporaryDirectory.path
        directory = "\(base)/moqtestkit-\(UInt64.random(in: 0...UInt64.max))"
        certificate = "\(directory)/cert.pem"
        privateKey = "\(directory)/key.pem"
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try Data(pem.certificate.utf8).write(to: URL(fileURLWithPath: certificate))
            try Data(pem.privateKey.utf8).write(to: URL(fileURLWithPath: privateKey))
        } catch {
            throw .relay("cannot write the certificate to \(directory): \(error)")
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }
}
