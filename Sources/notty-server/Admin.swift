import ArgumentParser
import Foundation
import NottyCommandLine
import NottyCore
import NottyHTTP
import NottyService
import NottyServicePostgres
import NottyServiceSQLite

struct Admin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin",
        abstract: ServerCommand.adminAbstract,
        discussion: "Use the same --db as notty serve; it may be running at the same time.",
        subcommands: [User.self, App.self, Team.self, Lockouts.self, Backup.self, Restore.self, RotateKey.self])

    struct User: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "user", abstract: "Add, list, remove, disable and enable users; set a user's password.",
            subcommands: [Add.self, List.self, Password.self, Disable.self, Enable.self, Remove.self])

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list", abstract: "Every user: name, display name, when made, active or disabled, teams, devices.")
            @OptionGroup var storage: StorageOptions
            @Flag(help: "One JSON object a line: name, displayName, created, disabled, teams, devices.") var json = false

            func run() async throws {
                try await reportingErrors {
                    let service = try await storage.service()
                    let users = try await service.admin.users()
                    if json {
                        for user in users { say(String(decoding: try NottyJSON.encoder.encode(user), as: UTF8.self)) }
                        return
                    }
                    if users.isEmpty { say("no users yet (notty admin user add NAME)") }
                    for user in users {
                        let created = user.created.map { ISOTime.format($0).prefix(10) } ?? "-"
                        let teams = user.teams.isEmpty ? "-" : user.teams.joined(separator: ",")
                        say(
                            "\(user.name)  \(user.displayName == user.name ? "" : "(\(user.displayName))  ")\(user.disabled ? "DISABLED" : "active")  made \(created)  teams \(teams)  devices \(user.devices)"
                        )
                    }
                }
            }
        }

        struct Password: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "password",
                abstract: "Set a user's password (read from standard input): the old one stops at once.",
                discussion: """
                    At least 8 characters. With --sign-out the user's devices, browsers, tokens, open streams and calendar feeds \
                    end too: every device signs in again with the new password (what to do after a leak). \
                    Example: printf '%s\\n' 'n3w-s3cret' | notty admin user password alice --sign-out
                    """)
            @OptionGroup var storage: StorageOptions
            @Argument(help: "The user name.") var name: String
            @Flag(name: .customLong("sign-out"), help: "Also sign the user out everywhere.") var signOut = false

            func run() async throws {
                try await reportingErrors {
                    let password = readPassword(prompt: "New password for \(name): ")
                    guard !password.isEmpty else { throw CLIError("no password given: type it, or pipe it on standard input") }
                    let service = try await storage.service()
                    try await service.admin.setPassword(name: name, password: password, signOut: signOut)
                    say("set the password of \(name)" + (signOut ? "; signed out everywhere" : ""))
                }
            }
        }

        struct Disable: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "disable",
                abstract:
                    "Disable a user: every token refused at once, open streams closed, sign-in refused; their notifications, teams and roles kept.")
            @OptionGroup var storage: StorageOptions
            @Argument(help: "The user name.") var name: String

            func run() async throws {
                try await reportingErrors {
                    let service = try await storage.service()
                    try await service.admin.setDisabled(name: name, true)
                    say("disabled \(name) (notty admin user enable \(name) undoes it)")
                }
            }
        }

        struct Enable: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "enable", abstract: "Enable a disabled user: their devices' tokens are taken again, and they may sign in.")
            @OptionGroup var storage: StorageOptions
            @Argument(help: "The user name.") var name: String

            func run() async throws {
                try await reportingErrors {
                    let service = try await storage.service()
                    try await service.admin.setDisabled(name: name, false)
                    say("enabled \(name)")
                }
            }
        }

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "add",
                abstract: "Add a user. The password (at least 8 characters) is read from standard input.",
                discussion: "Example: printf '%s\\n' 's3cret-pw' | notty admin user add alice")
            @OptionGroup var storage: StorageOptions
            @Argument(help: "The user name to sign in with.") var name: String
            @Option(name: .customLong("display-name"), help: "A name to show (default: the user name).") var displayName: String?

            func run() async throws {
                try await reportingErrors {
                    let password = readPassword(prompt: "Password for \(name): ")
                    guard !password.isEmpty else { throw CLIError("no password given: type it, or pipe it on standard input") }
                    let service = try await storage.service()
                    let user = try await service.admin.addUser(name: name, password: password, displayName: displayName)
                    say("added user \(user.userName) (id \(user.id))")
                }
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "remove", abstract: "Remove a user with their notifications, devices and tokens.")
            @OptionGroup var storage: StorageOptions
            @Argument(help: "The user name.") var name: String

            func run() async throws {
                try await reportingErrors {
                    let service = try await storage.service()
                    guard try await service.admin.removeUser(name: name) else { throw CLIError("no user named \(name)") }
                    say("removed user \(name)")
                }
            }
        }
    }

    struct App: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "app", abstract: "Register or remove app servers.", subcommands: [Add.self, Remove.self])

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
                    let (clientId, secret) = try await service.admin.addApp(hostName: hostName)
                    if json {
                        print(
                            JSONValue.object(["client_id": .string(clientId), "client_secret": .string(secret), "host_name": .string(hostName)])
                                .jsonText)
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
                    guard try await service.admin.removeApp(hostName: hostName) else { throw CLIError("no app with host name \(hostName)") }
                    say("removed app \(hostName)")
                }
            }
        }
    }

    struct Team: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "team",
            abstract: "Make and remove teams (their owners then add members with notty team).",
            discussion: """
                A team's notifications are handled once for every member (PROTOCOL.md §13.1). Its name \
                is 1–40 lowercase letters, digits and hyphens; a team keeps at least one owner.

                  notty admin team add ops --owner alice
                  notty admin team list
                  notty admin team remove ops
                """,
            subcommands: [Add.self, Remove.self, List.self])

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(commandName: "add", abstract: "Make a team with its first owner.")
            @OptionGroup var storage: StorageOptions
            @Argument(help: "The team's name, such as ops.") var name: String
            @Option(help: "The user who owns it (and adds its members).") var owner: String

            func run() async throws {
                try await reportingErrors {
                    let service = try await storage.service()
                    let team = try await service.teams.create(name: name, owner: owner)
                    say("added team \(team.name) (owner \(owner)); add members with: notty team \(team.name) --add USER")
                }
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a team and its memberships.")
            @OptionGroup var storage: StorageOptions
            @Argument(help: "The team's name.") var name: String

            func run() async throws {
                try await reportingErrors {
                    let service = try await storage.service()
                    guard try await service.teams.remove(name: name) else { throw CLIError("no team named \(name) (notty admin team list)") }
                    say("removed team \(name)")
                }
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(commandName: "list", abstract: "Every team and its members.")
            @OptionGroup var storage: StorageOptions
            @Flag(help: "Print one JSON object per team.") var json = false

            func run() async throws {
                try await reportingErrors {
                    let service = try await storage.service()
                    let teams = try await service.teams.all()
                    if json {
                        for team in teams { print(JSONValue.encoding(team).jsonText) }
                        return
                    }
                    if teams.isEmpty { say("no teams (notty admin team add NAME --owner USER)") }
                    for team in teams { say(team.summary) }
                }
            }
        }
    }

    struct Lockouts: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "lockouts",
            abstract: "List failed sign-ins and lockouts, or clear them.",
            discussion: """
                Ten failed sign-ins for one user name (or client id) within 5 minutes, or a hundred \
                from one address, lock it for a minute; each further failure locks it again for \
                twice as long (up to a day). A locked name gets 429 with Retry-After and no \
                password is checked. Keys look like user:alice, client:ID, address:203.0.113.7.
                """,
            subcommands: [List.self, Clear.self],
            defaultSubcommand: List.self)

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(commandName: "list", abstract: "Every key with failed sign-ins, locked ones first.")
            @OptionGroup var storage: StorageOptions
            @Flag(help: "Print a JSON array of {key, failures, locked_until, strikes}.") var json = false

            func run() async throws {
                try await reportingErrors {
                    let service = try await storage.service()
                    let now = Date()
                    let records = try await service.admin.lockouts().sorted {
                        ($0.lockedUntil ?? .distantPast, $1.key) > ($1.lockedUntil ?? .distantPast, $0.key)
                    }
                    if json {
                        print(
                            JSONValue.array(
                                records.map { record in
                                    .object([
                                        "key": .string(record.key), "failures": .number(Double(record.failures)),
                                        "strikes": .number(Double(record.strikes)),
                                        "locked_until": record.lockedUntil.map { .string(ISOTime.format($0)) } ?? .null,
                                    ])
                                }
                            ).jsonText)
                        return
                    }
                    if records.isEmpty { say("no failed sign-ins"); return }
                    for record in records {
                        if let until = record.lockedUntil, until > now {
                            say("\(record.key)  locked for \(Int(until.timeIntervalSince(now).rounded(.up))) s more (lockout \(record.strikes))")
                        } else {
                            say(
                                "\(record.key)  \(record.failures) failed since \(ISOTime.format(record.windowStart))\(record.strikes > 0 ? ", locked \(record.strikes) time(s)" : "")"
                            )
                        }
                    }
                }
            }
        }

        struct Clear: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "clear", abstract: "Unlock keys at once and forget their failures.",
                discussion: "Example: notty admin lockouts clear user:alice")
            @OptionGroup var storage: StorageOptions
            @Argument(help: ArgumentHelp("Keys as listed (user:NAME, client:ID, address:IP).", valueName: "key")) var keys: [String] = []
            @Flag(help: "Clear every key.") var all = false

            func validate() throws {
                if all == !keys.isEmpty { throw ArgumentParser.ValidationError("give keys (see notty admin lockouts) or --all") }
            }

            func run() async throws {
                try await reportingErrors {
                    let service = try await storage.service()
                    // User names are compared without case (user:Alice is user:alice).
                    let keys = keys.map { $0.hasPrefix("user:") ? $0.lowercased() : $0 }
                    let cleared = try await service.admin.clearLockouts(keys: all ? nil : keys)
                    if !all && cleared == 0 { throw CLIError("no failed sign-ins for \(keys.joined(separator: ", ")) (see notty admin lockouts)") }
                    say("cleared \(cleared) key(s)")
                }
            }
        }
    }
}
