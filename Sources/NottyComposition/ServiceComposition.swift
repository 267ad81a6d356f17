import Logging
import NottyDialects
import NottyIncidents
import NottyOnCall
import NottyPaging
import NottySecrets
import NottyService
import NottyWebPush

extension NotificationService {
    /// The service with its engines (paging's ``Escalation``, Web Push's ``WebPushDelivery``,
    /// on call's ``OnCall``, ``Heartbeats`` and the ``NtfyUpstream``): what `notty serve` runs.
    /// `outbound` makes the requests pages, actions, pushes and contact tests send (nil: none
    /// are made, and they say so).
    public convenience init(
        storage: any ServiceStorage, config: ServiceConfig = ServiceConfig(), clock: any ServiceClock = SystemClock(),
        metrics: ServiceMetrics = ServiceMetrics(), logger: Logger = Logger(label: "notty.serve"), outbound: (any OutboundHTTP)? = nil,
        secrets: SecretBox
    ) {
        self.init(
            storage: storage, config: config, clock: clock, metrics: metrics, logger: logger, outbound: outbound, secrets: secrets,
            paging: { core in Escalation(core: core, storage: storage, outbound: outbound) },
            webPush: { core, inbox in WebPushDelivery(core: core, inbox: inbox, outbound: outbound, storage: storage) },
            onCall: { core, inbox, paging in OnCall(core: core, inbox: inbox, paging: paging, outbound: outbound, storage: storage) },
            heartbeats: { core, teams, publishing, inbox in
                Heartbeats(core: core, storage: storage, teams: teams, publishing: publishing, inbox: inbox)
            },
            ntfyUpstream: { core, inbox in NtfyUpstream(core: core, storage: storage, inbox: inbox, outbound: outbound) })
    }
}
