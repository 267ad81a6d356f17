import ArgumentParser
import Foundation
import NottyCommandLine
import NottyCore
import NottySync

// Teams (PROTOCOL.md §13.1): the administrator makes them; their owners add and remove members.
struct TeamCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "team",
        abstract: "Your teams, and their members (owners add and remove them).",
        discussion: """
            A team's notifications are handled once for all of its members: whoever reads, \
            dismisses or acts on one does it for everyone. The service's administrator makes \
            a team with its first owner (notty admin team add ops --owner alice); its owners \
            add and remove members; anyone may leave.

              notty team --list               (your teams and their members)
              notty team ops                  (one team's members)
              notty team ops --add bob        (owners: bob becomes a member)
              notty team ops --add carol --owner
              notty team ops --remove bob     (owners; or bob himself, to leave)
              notty team ops --apps           (owners: the team's app subscriptions and hooks)
              notty team ops --revoke ID      (owners: one of them ends, whoever made it)

            A team keeps at least one owner: make another member an owner before the last \
            one leaves. A team has at most \(Team.maxMembers) members; a user is in at most \
            \(Team.maxTeamsPerUser) teams.
            """)

    @Argument(help: "The team's name.") var name: String?
    @Flag(help: "List your teams and their members (also what notty team alone does).") var list = false
    @Flag(help: "Print JSON: one object per team.") var json = false
    @Option(help: ArgumentHelp("Add this user to the team (or change their role).", valueName: "user")) var add: String?
    @Flag(help: "With --add: as an owner (the default is a member).") var owner = false
    @Option(help: ArgumentHelp("Take this user out of the team (yourself: leave it).", valueName: "user")) var remove: String?
    @Flag(help: "Owners: list the team's app subscriptions and hooks.") var apps = false
    @Option(help: ArgumentHelp("Owners: revoke one of the team's app subscriptions or hooks (an id --apps shows).", valueName: "id"))
    var revoke: String?

    func validate() throws {
        if [add != nil, remove != nil, apps, revoke != nil].filter({ $0 }).count > 1 {
            throw ArgumentParser.ValidationError("give one of --add, --remove, --apps and --revoke")
        }
        if (apps || revoke != nil) && name == nil { throw ArgumentParser.ValidationError("name the team: notty team NAME --apps") }
        if (add != nil || remove != nil) && name == nil { throw ArgumentParser.ValidationError("name the team: notty team NAME --add USER") }
        if owner && add == nil { throw ArgumentParser.ValidationError("--owner goes with --add USER") }
        if list && name != nil { throw ArgumentParser.ValidationError("--list shows all your teams: leave out the name, or leave out --list") }
        if let name, let problem = Team.nameProblem(name) { throw ArgumentParser.ValidationError(problem) }
    }

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            if let name, let user = add {
                let team = try await client.setTeamMember(name, user: user, role: owner ? .owner : .member)
                say("\(user) is \(owner ? "an owner" : "a member") of \(team.name)")
                return
            }
            if let name, apps {
                let list = try await client.teamSubscriptions(name)
                if json {
                    for item in list { print(JSONValue.encoding(item).jsonText) }
                    return
                }
                if list.isEmpty {
                    say("\(name) has no app subscriptions or hooks (owners make them: notty subscribe --app HOST --webhook --team \(name))")
                }
                for item in list {
                    let kind = item.platform == "webhook" ? "hook" : "app"
                    let made = item.createdDateTime.map { ISOTime.format($0).prefix(10) } ?? "-"
                    say("\(item.userNotificationSubscriptionId)  \(kind)  \(item.targetHostName ?? "-")  made \(made)")
                }
                return
            }
            if let name, let id = revoke {
                try await client.revokeTeamSubscription(name, id: id)
                say("revoked \(id) of \(name)")
                return
            }
            if let name, let user = remove {
                try await client.removeTeamMember(name, user: user)
                say("\(user) left \(name)")
                return
            }
            let teams = if let name { [try await client.team(name)] } else { try await client.teams() }
            if json {
                for team in teams { print(JSONValue.encoding(team).jsonText) }
                return
            }
            if teams.isEmpty { say("you are in no team (the service's administrator makes them: notty admin team add NAME --owner USER)") }
            for team in teams {
                say(team.summary)
                if let shift = team.onCall {
                    say("  on call: \(shift.user) until \(LocalTime.short(shift.until, now: Date(), zone: .current))")
                }
            }
        }
    }
}
