import ArgumentParser
import FerryKit
import Foundation

struct AuthCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "auth",
        abstract: "Authorise a store's OAuth2 access: show a URL and a code to approve, and save the refresh token ferryd uses.",
        discussion: """
        For a store with oauth2-grant = refresh-token and oauth2-device-url (the device authorization grant, RFC 8628): \
        open the URL it prints on any device, enter the code, approve; the refresh token is saved in oauth2-tokens/STORE.json \
        beside the replica (mode 0600), where ferryd reads it at its next refresh, without a reload. Run it as the service's \
        user (sudo -u ferry ferry auth STORE) or as root, which gives the file to the owner of the replica's directory. \
        For oauth2-grant = client-credentials it fetches one token, to check the client. Exit 77 when the server refuses, \
        the code expires or the person denies.
        """)

    @OptionGroup var options: ConfigurationOptions

    @Argument(help: "The store to authorise.", completion: storeNames)
    var store: String

    func run() throws {
        do {
            let configuration = try options.loadForWriting()
            let authorization = try DeviceAuthorization(store: store, configuration: configuration,
                                                        databasePath: options.database ?? configuration.global.databasePath)
            let outcome = try authorization.run { prompt in
                print("To authorise store \(store), open \(prompt.verificationURI) and enter the code \(prompt.userCode)")
                if let complete = prompt.verificationURIComplete { print("(or open \(complete))") }
                print("Waiting up to \(Int(prompt.expiresIn / 60)) minutes for the approval...")
                fflush(nil)
            }
            switch outcome {
            case .saved(let path):
                print("authorised: the refresh token is saved in \(path); ferryd uses it at its next refresh "
                    + "(after a refused one, at its next retry; systemctl reload ferryd starts it now)")
            case .clientWorks: print("the client credentials work: store \(store) needs no authorisation by a person")
            }
        } catch let exit as ExitCode {
            throw exit
        } catch {
            throw fail(error)
        }
    }
}
