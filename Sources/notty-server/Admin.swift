import ArgumentParser
import Foundation
import NottyCommandLine
import NottyCore
import NottyServer

struct Admin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin",
        abstract: ServerCommand.adminAbstract,
        discussion: "Use the same --db as notty serve; it may be running at the same time.",
        subcommands: [User.self, App.self])

    struct User: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "user", abstract: "Add or remove users.", subcommands: [Add.self, Remove.self])

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "add",
                abstract: "Add a user. The password is read from standard input.",
                discussion: "Example: printf '%s\\n' 's3cret' | notty admin user add alice")
            @OptionGroup var storage: StorageOptions
            @Argument(help: "The user name to sign in with.") var name: String
            @Option(name: .customLong("display-name"), help: "A name to show (default: the user name).") var displayName: String?

            func run() async throws {
                try await reportingErrors {
                    let password = readPassword(prompt: "Password for \(name): ")
                    guard !password.isEmpty else { throw CLIError("no password given: type it, or pipe it on standard input") }
                    let service = try await storage.service()
                    let user = try await service.addUser(name: name, password: password, displayName: displayName)
                    say("added user \(user.userName) (id \(user.id))")
                }
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a user with their notifications, devices and tokens.")
            @OptionGroup var storage: StorageOptions
            @Argument(help: "The user name.") var name: String

            func run() async throws {
                try await reportingErrors {
                    let service = try await storage.service()
                    guard try await service.removeUser(name: name) else { throw CLIError("no user named \(name)") }
                    say("removed user \(name)")
                }
            }
        }
    }

    struct App: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "app", abstract: "Register or remove app servers.", subcommands: [Add.self, Remove.self])

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "add",
                abstract: "Register an app server by its host name; prints its client id and secret.",
                discussion: "The secret is shown only this once; the service keeps only its hash.")
            @OptionGroup var storage: StorageOptions
            @Argument(help: "The app's host name (targetHostName), e.g. ci.example.com.") var hostName: String
            @Flag(help: "Print {\"client_id\",\"client_secret\",\"host_name\"} as JSON.") var json = false

            func run() async throws {
                try await reportingErrors {
                    let service = try await storage.service()
                    let (clientId, secret) = try await service.addApp(hostName: hostName)
                    if json {
                        print(JSONValue.object(["client_id": .string(clientId), "client_secret": .string(secret), "host_name": .string(hostName)]).jsonText)
                    } else {
                        say("client_id: \(clientId)")
                        say("client_secret: \(secret)")
                    }
                }
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove an app; its tokens stop working.")
            @OptionGroup var storage: StorageOptions
            @Argument(help: "The app's host name.") var hostName: String

            func run() async throws {
                try await reportingErrors {
                    let service = try await storage.service()
                    guard try await service.removeApp(hostName: hostName) else { throw CLIError("no app with host name \(hostName)") }
                    say("removed app \(hostName)")
                }
            }
        }
    }
}
