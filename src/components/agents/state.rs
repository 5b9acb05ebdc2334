//! The host state machine of late binding (spec C.3), as assisted-service's `stateswitch`
//! machines (`internal/host/statemachine.go`, `statemachine_pool.go`) run it: the exact state
//! strings, and for each (state, event) the target state, the `statusInfo` written and what the
//! host record loses or gains. A pair without a rule is refused with stateswitch's error and
//! leaves the host as it was.
//!
//! Upstream picks the first rule whose source states and condition match; the order of the
//! arms below is that order (openshift/assisted-service main, commit 063b2579, August 2026).
//! What this module leaves out: the installation flow's own rules (install, reset, media
//! disconnect, and the Refresh rules that depend on the cluster's progress, timeouts of
//! installation stages and log collection), which late binding does not drive: on Refresh a
//! host in an installation state stays where it is.
//!
//! Some rules match and still refuse: Register of an `installed` host (409) or of one in
//! `installing-pending-user-action` that booted the discovery image again (403) answer with
//! upstream's message and leave the host as it was ([`Refusal::Rejected`]).

use std::fmt;
use std::str::FromStr;

use crate::suggest::unknown_value;

macro_rules! host_states {
    ($($variant:ident => $text:literal,)*) => {
        /// A host's state (`status.debugInfo.state` of its Agent), as assisted-service's
        /// `models.HostStatus*` spells it. [`HostState::Unregistered`] (`""`) is before the
        /// first registration.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum HostState { $($variant,)* }

        impl HostState {
            /// Every state, in the order of spec C.3 (`""` first).
            pub const ALL: &'static [HostState] = &[$(HostState::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self { $(HostState::$variant => $text,)* }
            }
        }
    };
}

host_states! {
    Unregistered => "",
    DiscoveringUnbound => "discovering-unbound",
    KnownUnbound => "known-unbound",
    InsufficientUnbound => "insufficient-unbound",
    DisconnectedUnbound => "disconnected-unbound",
    DisabledUnbound => "disabled-unbound",
    Binding => "binding",
    Unbinding => "unbinding",
    UnbindingPendingUserAction => "unbinding-pending-user-action",
    Reclaiming => "reclaiming",
    ReclaimingRebooting => "reclaiming-rebooting",
    Discovering => "discovering",
    Known => "known",
    Insufficient => "insufficient",
    Disconnected => "disconnected",
    Disabled => "disabled",
    PendingForInput => "pending-for-input",
    PreparingForInstallation => "preparing-for-installation",
    PreparingSuccessful => "preparing-successful",
    PreparingFailed => "preparing-failed",
    Installing => "installing",
    InstallingInProgress => "installing-in-progress",
    InstallingPendingUserAction => "installing-pending-user-action",
    Installed => "installed",
    AddedToExistingCluster => "added-to-existing-cluster",
    Error => "error",
    Cancelled => "cancelled",
    Resetting => "resetting",
    ResettingPendingUserAction => "resetting-pending-user-action",
}

use HostState::*;

/// The four pool states Register and Refresh act on (upstream's lists; `disabled-unbound`,
/// a legacy state, is in none of them).
const POOL: &[HostState] = &[
    DiscoveringUnbound,
    InsufficientUnbound,
    KnownUnbound,
    DisconnectedUnbound,
];

/// A bound host before installation: what UnbindHost moves to `unbinding`.
const BEFORE_INSTALLATION: &[HostState] = &[
    Known,
    Discovering,
    Disconnected,
    Insufficient,
    PendingForInput,
];

/// The states in which a host counts as installing: the Agent webhook refuses a move, the
/// Agent controller refuses an unbind of a day-1 host.
pub const INSTALLING: &[HostState] = &[
    PreparingForInstallation,
    PreparingFailed,
    PreparingSuccessful,
    Installing,
    InstallingInProgress,
    InstallingPendingUserAction,
];

impl HostState {
    /// Not bound to any cluster: the pool states and the ways into the pool.
    pub fn is_unbound(self) -> bool {
        matches!(
            self,
            DiscoveringUnbound
                | KnownUnbound
                | InsufficientUnbound
                | DisconnectedUnbound
                | DisabledUnbound
                | Unbinding
                | UnbindingPendingUserAction
                | ReclaimingRebooting
        )
    }

    /// One of [`INSTALLING`].
    pub fn is_installing(self) -> bool {
        INSTALLING.contains(&self)
    }
}

impl fmt::Display for HostState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that is no host state.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", unknown_value("host state", .0, &HostState::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>()))]
pub struct UnknownState(pub String);

impl FromStr for HostState {
    type Err = UnknownState;

    fn from_str(s: &str) -> Result<HostState, UnknownState> {
        (HostState::ALL.iter().copied())
            .find(|state| state.as_str() == s)
            .ok_or_else(|| UnknownState(s.to_owned()))
    }
}

/// What a Refresh knows about a host: its connection, and the outcome of the validations the
/// state machine reads (`validation.rs` computes them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostFacts {
    /// The host checked in recently (upstream: within 3 minutes).
    pub connected: bool,
    /// The discovery media can still be read.
    pub media_connected: bool,
    pub has_inventory: bool,
    pub has_min_valid_disks: bool,
    pub has_min_cpu_cores: bool,
    pub has_min_memory: bool,
    pub hostname_valid: bool,
    /// Bound hosts only: every validation a `known` host needs beyond the minimum hardware
    /// and the hostname (the cluster-dependent ones) passes.
    pub sufficient_for_install: bool,
    /// Bound hosts only: the input a known host needs is there (the cluster's machine network;
    /// upstream's `requiredInputFieldsExist`). Without it the host is `pending-for-input`.
    pub input_fields_exist: bool,
    /// The messages of the failed validations, for `statusInfo`.
    pub failing_validations: Vec<String>,
    /// `reclaiming`/`reclaiming-rebooting` only: the reclaim has taken too long.
    pub reclaim_timed_out: bool,
}

impl HostFacts {
    /// Upstream's `hasMinRequiredHardware` for the pool: disks, cores and memory.
    pub fn has_min_hardware(&self) -> bool {
        self.has_min_valid_disks && self.has_min_cpu_cores && self.has_min_memory
    }

    /// Upstream's `sufficientToBeBound`: the minimum hardware and a valid hostname.
    pub fn sufficient_to_be_bound(&self) -> bool {
        self.has_min_hardware() && self.hostname_valid
    }
}

/// What a registration knows about the host besides its state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Registration {
    /// The host record has a cluster (only the first registration, from `""`, reads it: a
    /// re-registering host is bound or not by the state it is in).
    pub bound: bool,
    /// Its install stage is `Rebooting` (upstream's `IsHostInReboot`).
    pub in_reboot: bool,
    /// A day-2 host whose install stage is `Done`.
    pub day2_done: bool,
    /// The installation disk as upstream names it when the host booted the discovery image
    /// instead of it: `<model> <serial> (<name>, <id>)`, the parts it has.
    pub installation_disk: String,
    /// The installation disk's path (`installation_disk_path`).
    pub installation_path: String,
}

impl Registration {
    /// A registration with only `bound` known.
    pub fn bound(bound: bool) -> Registration {
        Registration {
            bound,
            ..Registration::default()
        }
    }
}

/// What happens to a host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostEvent {
    /// The discovery agent registered.
    Register(Registration),
    /// The host monitor re-evaluated the host.
    Refresh(HostFacts),
    /// BindHost: bind to a cluster.
    Bind,
    /// UnbindHost: unbind without reclaiming.
    Unbind,
    /// ReclaimHost: unbind, rebooting an installed host into the discovery image.
    Reclaim,
    /// The reclaim agent is rebooting the host.
    RebootingForReclaim,
    /// The reclaim agent gave up.
    ReclaimFailed,
    /// CancelInstallation: the installation of the host's cluster is cancelled.
    Cancel,
}

impl HostEvent {
    pub fn kind(&self) -> EventKind {
        match self {
            HostEvent::Register(_) => EventKind::RegisterHost,
            HostEvent::Refresh(_) => EventKind::RefreshHost,
            HostEvent::Bind => EventKind::BindHost,
            HostEvent::Unbind => EventKind::UnbindHost,
            HostEvent::Reclaim => EventKind::ReclaimHost,
            HostEvent::RebootingForReclaim => EventKind::RebootingForReclaim,
            HostEvent::ReclaimFailed => EventKind::ReclaimHostFailed,
            HostEvent::Cancel => EventKind::CancelInstallation,
        }
    }
}

/// An event without its data, named as upstream's transition types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    RegisterHost,
    RefreshHost,
    BindHost,
    UnbindHost,
    ReclaimHost,
    RebootingForReclaim,
    ReclaimHostFailed,
    CancelInstallation,
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A field of the host record a transition changes (upstream's column names in the doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Effect {
    /// `cluster_id` := the cluster bound to.
    SetClusterId,
    /// `cluster_id` := none.
    ClearClusterId,
    /// `kind` := `Host` (a day-2 host becomes day-1 again).
    ResetKind,
    /// `role` := `auto-assign`.
    ResetRole,
    /// `suggested_role` := `""`.
    ClearSuggestedRole,
    /// `inventory` := `""`.
    ClearInventory,
    /// `progress_*` and `stage_*` := zero: current stage, percentage, info, timestamps.
    ClearProgress,
    /// `bootstrap` := false.
    ClearBootstrap,
    /// `images_status` := `""`.
    ClearImagesStatus,
    /// `logs_info`, `logs_started_at`, `logs_collected_at` := zero.
    ClearLogs,
    /// `connectivity` := `""`.
    ClearConnectivity,
    /// `api_vip_connectivity` := `""`.
    ClearApiVipConnectivity,
    /// `domain_name_resolutions` := `""`.
    ClearDomainNameResolutions,
    /// `free_addresses` := `""`.
    ClearFreeAddresses,
    /// `installation_disk_id`, `installation_disk_path` := `""`.
    ClearInstallationDisk,
    /// `machine_config_pool_name` := `""`.
    ClearMachineConfigPool,
    /// `ntp_sources` := `""`.
    ClearNtpSources,
}

use Effect::*;

/// PostBindHost: `resetFields` and the cluster.
pub const BIND_EFFECTS: &[Effect] = &[
    ClearProgress,
    ClearInventory,
    ClearBootstrap,
    ClearImagesStatus,
    SetClusterId,
];

/// PostUnbindHost (`updateHostForUnbind`): `resetFields`, the logs and `restFieldsOnUnbind`.
pub const UNBIND_EFFECTS: &[Effect] = &[
    ClearProgress,
    ClearInventory,
    ClearBootstrap,
    ClearImagesStatus,
    ClearLogs,
    ClearClusterId,
    ResetKind,
    ClearConnectivity,
    ClearDomainNameResolutions,
    ClearFreeAddresses,
    ClearInstallationDisk,
    ClearMachineConfigPool,
    ResetRole,
    ClearApiVipConnectivity,
    ClearSuggestedRole,
];

/// PostRegisterHost for a host already known: it may come back with other hardware, so what
/// it reported before goes.
pub const REREGISTER_EFFECTS: &[Effect] = &[
    ClearProgress,
    ClearInventory,
    ClearBootstrap,
    ClearImagesStatus,
    ClearNtpSources,
    ClearLogs,
];

/// PostRegisterDuringPreparingForInstallation: a host registering again while its cluster
/// prepares keeps its inventory and bootstrap flag (the cluster needs them to go on).
pub const REREGISTER_KEEPING_INVENTORY_EFFECTS: &[Effect] =
    &[ClearProgress, ClearImagesStatus, ClearNtpSources, ClearLogs];

/// `statusInfo` texts (assisted-service `internal/host/common.go`).
pub mod status_info {
    pub const DISCONNECTED: &str = "Host has stopped communicating with the installation service";
    pub const DISCOVERING: &str = "Waiting for host to send hardware details";
    /// `$FAILING_VALIDATIONS` is replaced by the failed validations' messages, sorted,
    /// joined by ` ; `.
    pub const PENDING_FOR_INPUT: &str = "Waiting for user input: $FAILING_VALIDATIONS";
    /// The reason CancelInstallationInternal gives, which becomes the `statusInfo`.
    pub const CANCELLED: &str = "installation was canceled by user";
    pub const INSUFFICIENT_HARDWARE: &str =
        "Host does not meet the minimum hardware requirements: $FAILING_VALIDATIONS";
    pub const NOT_READY_FOR_INSTALL: &str =
        "Host cannot be installed due to following failing validation(s): $FAILING_VALIDATIONS";
    pub const KNOWN: &str = "Host is ready to be installed";
    pub const READY_TO_BE_BOUND: &str = "Host is ready to be bound to a cluster";
    pub const BINDING: &str = "Host is waiting to be bound to the cluster";
    pub const UNBINDING: &str = "Host is waiting to be unbound from the cluster";
    pub const REBOOTING_FOR_RECLAIM: &str = "Host is rebooting into the discovery image";
    pub const RESTARTED_DURING_INSTALLATION: &str =
        "The host unexpectedly restarted during the installation";
    pub const CONNECTION_TIMED_OUT_PREPARING: &str = "Host failed to install due to timeout while connecting to host during the preparation phase.";
    /// `PostRegisterDuringReboot`'s first sentence; the installation disk follows.
    pub const WRONG_BOOT_ORDER: &str = "Expected the host to boot from disk, but it booted the installation image - please reboot and fix boot order to boot from disk";
    /// `PostRegisterAfterInstallation`'s refusal (409).
    pub const REGISTER_AFTER_INSTALLATION: &str = "Host is trying to register after the cluster has already been installed. That most probably means that the host is booting from the installation ISO, and therefore not effectively joining the cluster. The request will be ignored. Fix the boot order and reboot the host.";
    /// `PostRegisterDuringReboot`'s refusal (403) from `installing-pending-user-action`;
    /// `{}` is the installation path.
    pub const REQUIRED_TO_BOOT_FROM_DISK: &str = "Host is required to be booted from disk";
}

/// A transition that runs: where the host goes, the `statusInfo` it gets (none: unchanged)
/// and what its record loses or gains.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    pub from: HostState,
    pub event: EventKind,
    pub to: HostState,
    pub status_info: Option<String>,
    pub effects: &'static [Effect],
}

/// A transition that does not run: the host is left as it was.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{refusal}")]
pub struct TransitionError {
    pub from: HostState,
    pub event: EventKind,
    pub refusal: Refusal,
}

/// Why a transition does not run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No rule for this state and event. The text is stateswitch's
    /// (`NoConditionPassedToRunTransaction`), which BindHostInternal and UnbindHostInternal
    /// return as a 500.
    #[error("no condition found to run transition")]
    NoRule,
    /// A rule matched and refused with this HTTP status and message (a registration after
    /// installation, or during a reboot from `installing-pending-user-action`).
    #[error("{message}")]
    Rejected { code: u16, message: String },
}

impl TransitionError {
    /// The HTTP status upstream answers with: a rejection's own, else 500.
    pub fn code(&self) -> u16 {
        match &self.refusal {
            Refusal::NoRule => 500,
            Refusal::Rejected { code, .. } => *code,
        }
    }

    /// The states from which the same event would have run, and the host's: `BindHost is
    /// allowed from known-unbound only; the host is insufficient-unbound`. For a rejection,
    /// empty.
    pub fn explain(&self, event: &HostEvent) -> String {
        if self.refusal != Refusal::NoRule {
            return String::new();
        }
        let allowed = allowed_from(event);
        let states = match allowed.as_slice() {
            [] => "no state".to_owned(),
            [only] => format!("{only} only"),
            many => many
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        };
        let from = match self.from {
            HostState::Unregistered => "\"\"".to_owned(),
            s => s.to_string(),
        };
        format!(
            "{} is allowed from {states}; the host is {from}",
            self.event
        )
    }
}

/// The states from which `event` runs (a rejection counts as running).
pub fn allowed_from(event: &HostEvent) -> Vec<HostState> {
    (HostState::ALL.iter().copied())
        .filter(|s| match transition(*s, event) {
            Ok(_) => true,
            Err(e) => matches!(e.refusal, Refusal::Rejected { .. }),
        })
        .collect()
}

/// The state machine: what `event` does to a host in `from`.
pub fn transition(from: HostState, event: &HostEvent) -> Result<Transition, TransitionError> {
    let kind = event.kind();
    let go = |to: HostState, status_info: Option<String>, effects: &'static [Effect]| {
        Ok(Transition {
            from,
            event: kind,
            to,
            status_info,
            effects,
        })
    };
    let text = |s: &str| Some(s.to_owned());
    let refused = Err(TransitionError {
        from,
        event: kind,
        refusal: Refusal::NoRule,
    });
    let rejected = |code: u16, message: String| {
        Err(TransitionError {
            from,
            event: kind,
            refusal: Refusal::Rejected { code, message },
        })
    };
    match event {
        HostEvent::Register(r) => match from {
            Unregistered if r.bound => go(Discovering, text(status_info::DISCOVERING), &[]),
            Unregistered => go(DiscoveringUnbound, text(status_info::DISCOVERING), &[]),
            PreparingForInstallation | PreparingSuccessful => go(
                Known,
                text(status_info::KNOWN),
                REREGISTER_KEEPING_INVENTORY_EFFECTS,
            ),
            s if POOL.contains(&s)
                || matches!(
                    s,
                    Unbinding | UnbindingPendingUserAction | ReclaimingRebooting
                ) =>
            {
                go(
                    DiscoveringUnbound,
                    text(status_info::DISCOVERING),
                    REREGISTER_EFFECTS,
                )
            }
            Binding
            | Discovering
            | Known
            | Insufficient
            | Disconnected
            | PendingForInput
            | ResettingPendingUserAction => go(
                Discovering,
                text(status_info::DISCOVERING),
                REREGISTER_EFFECTS,
            ),
            Resetting if r.in_reboot => go(Resetting, None, &[]),
            Resetting => go(
                Discovering,
                text(status_info::DISCOVERING),
                REREGISTER_EFFECTS,
            ),
            InstallingPendingUserAction if r.in_reboot || r.day2_done => rejected(
                403,
                format!(
                    "{} {}",
                    status_info::REQUIRED_TO_BOOT_FROM_DISK,
                    r.installation_path
                ),
            ),
            InstallingInProgress | AddedToExistingCluster if r.in_reboot || r.day2_done => {
                let info = match r.installation_disk.as_str() {
                    "" => status_info::WRONG_BOOT_ORDER.to_owned(),
                    disk => format!("{} {disk}", status_info::WRONG_BOOT_ORDER),
                };
                go(InstallingPendingUserAction, Some(info), &[])
            }
            Installing | InstallingInProgress => {
                go(Error, text(status_info::RESTARTED_DURING_INSTALLATION), &[])
            }
            Error => go(Error, None, &[]),
            Installed => rejected(409, status_info::REGISTER_AFTER_INSTALLATION.to_owned()),
            _ => refused,
        },
        HostEvent::Refresh(facts) => {
            refresh(from, facts).map_or(refused, |(to, info, effects)| go(to, info, effects))
        }
        HostEvent::Bind => match from {
            KnownUnbound => go(Binding, text(status_info::BINDING), BIND_EFFECTS),
            _ => refused,
        },
        HostEvent::Unbind => match from {
            s if BEFORE_INSTALLATION.contains(&s) => {
                go(Unbinding, text(status_info::UNBINDING), UNBIND_EFFECTS)
            }
            s if s.is_installing()
                || matches!(s, Installed | AddedToExistingCluster | Error | Cancelled) =>
            {
                go(
                    UnbindingPendingUserAction,
                    text(status_info::UNBINDING),
                    UNBIND_EFFECTS,
                )
            }
            _ => refused,
        },
        HostEvent::Reclaim => match from {
            Installed | AddedToExistingCluster => {
                go(Reclaiming, text(status_info::UNBINDING), UNBIND_EFFECTS)
            }
            s if BEFORE_INSTALLATION.contains(&s) => {
                go(Unbinding, text(status_info::UNBINDING), UNBIND_EFFECTS)
            }
            Error | Cancelled => go(
                UnbindingPendingUserAction,
                text(status_info::UNBINDING),
                UNBIND_EFFECTS,
            ),
            _ => refused,
        },
        HostEvent::RebootingForReclaim => match from {
            Reclaiming => go(
                ReclaimingRebooting,
                text(status_info::REBOOTING_FOR_RECLAIM),
                &[],
            ),
            _ => refused,
        },
        HostEvent::Cancel => match from {
            InstallingPendingUserAction | Installing | InstallingInProgress | Installed | Error => {
                go(Cancelled, text(status_info::CANCELLED), &[])
            }
            PreparingForInstallation | PreparingSuccessful => {
                go(Known, text(status_info::CANCELLED), &[])
            }
            Known => go(Known, None, &[]),
            _ => refused,
        },
        HostEvent::ReclaimFailed => match from {
            Reclaiming | ReclaimingRebooting => go(
                UnbindingPendingUserAction,
                text(status_info::UNBINDING),
                UNBIND_EFFECTS,
            ),
            _ => refused,
        },
    }
}

type Target = (HostState, Option<String>, &'static [Effect]);

/// RefreshHost: the pool machine's rules for pool states and `binding`/`unbinding`, the
/// reclaim timeout, and the bound machine's rules before installation.
fn refresh(from: HostState, facts: &HostFacts) -> Option<Target> {
    let with = |to: HostState, info: &str| Some((to, Some(fill(info, facts)), &[][..]));
    let stay = Some((from, None, &[][..]));
    let ready = facts.connected && facts.media_connected;
    let with_inventory = ready && facts.has_inventory;
    match from {
        s if (POOL.contains(&s) || s == Unbinding) && !facts.connected => {
            with(DisconnectedUnbound, status_info::DISCONNECTED)
        }
        DisconnectedUnbound | DiscoveringUnbound if ready && !facts.has_inventory => {
            with(DiscoveringUnbound, status_info::DISCOVERING)
        }
        s if POOL.contains(&s) && with_inventory && !facts.sufficient_to_be_bound() => {
            with(InsufficientUnbound, status_info::INSUFFICIENT_HARDWARE)
        }
        Binding | Unbinding => stay,
        s if POOL.contains(&s) && with_inventory => {
            with(KnownUnbound, status_info::READY_TO_BE_BOUND)
        }
        Reclaiming | ReclaimingRebooting if facts.reclaim_timed_out => Some((
            UnbindingPendingUserAction,
            Some(status_info::UNBINDING.to_owned()),
            UNBIND_EFFECTS,
        )),
        Reclaiming | ReclaimingRebooting => stay,
        Discovering | Insufficient | Known | PendingForInput | Disconnected | PreparingFailed
            if !ready =>
        {
            with(Disconnected, status_info::DISCONNECTED)
        }
        PreparingForInstallation | PreparingSuccessful if !ready => {
            with(Disconnected, status_info::CONNECTION_TIMED_OUT_PREPARING)
        }
        Disconnected | Discovering if ready && !facts.has_inventory => {
            with(Discovering, status_info::DISCOVERING)
        }
        Disconnected | Discovering | Insufficient | Known | PendingForInput
            if with_inventory && !facts.has_min_hardware() =>
        {
            with(Insufficient, status_info::INSUFFICIENT_HARDWARE)
        }
        Disconnected | Insufficient | PendingForInput | Discovering | Known
            if with_inventory && facts.has_min_hardware() && !facts.input_fields_exist =>
        {
            with(PendingForInput, status_info::PENDING_FOR_INPUT)
        }
        Disconnected | Insufficient | PendingForInput | Discovering | Known
            if with_inventory
                && facts.has_min_hardware()
                && !(facts.hostname_valid && facts.sufficient_for_install) =>
        {
            with(Insufficient, status_info::NOT_READY_FOR_INSTALL)
        }
        Disconnected | Insufficient | PendingForInput | Discovering | Known
            if with_inventory && facts.has_min_hardware() =>
        {
            with(Known, status_info::KNOWN)
        }
        PreparingForInstallation
        | PreparingSuccessful
        | Installing
        | InstallingInProgress
        | InstallingPendingUserAction
        | Installed
        | AddedToExistingCluster
        | Error
        | Cancelled
        | Resetting
        | ResettingPendingUserAction => stay,
        _ => None,
    }
}

/// Upstream's `PostRefreshHost` template filling: the failed validations' messages, sorted.
fn fill(template: &str, facts: &HostFacts) -> String {
    let mut failing = facts.failing_validations.clone();
    failing.sort();
    template.replace("$FAILING_VALIDATIONS", &failing.join(" ; "))
}

/// Where a pool host's facts put it, whatever state it is in now: what `known-unbound` vs
/// `insufficient-unbound` (vs `discovering-unbound`, `disconnected-unbound`) means.
pub fn pool_verdict(facts: &HostFacts) -> HostState {
    if !facts.connected {
        DisconnectedUnbound
    } else if !facts.media_connected || !facts.has_inventory {
        DiscoveringUnbound
    } else if facts.sufficient_to_be_bound() {
        KnownUnbound
    } else {
        InsufficientUnbound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_good() -> HostFacts {
        HostFacts {
            connected: true,
            media_connected: true,
            has_inventory: true,
            has_min_valid_disks: true,
            has_min_cpu_cores: true,
            has_min_memory: true,
            hostname_valid: true,
            sufficient_for_install: true,
            input_fields_exist: true,
            failing_validations: Vec::new(),
            reclaim_timed_out: false,
        }
    }

    fn disconnected() -> HostFacts {
        HostFacts {
            connected: false,
            ..all_good()
        }
    }

    fn no_inventory() -> HostFacts {
        HostFacts {
            has_inventory: false,
            ..all_good()
        }
    }

    fn few_cores() -> HostFacts {
        HostFacts {
            has_min_cpu_cores: false,
            failing_validations: vec!["z too few".into(), "a too small".into()],
            ..all_good()
        }
    }

    fn cluster_not_ready() -> HostFacts {
        HostFacts {
            sufficient_for_install: false,
            failing_validations: vec!["Machine Network CIDR is undefined".into()],
            ..all_good()
        }
    }

    fn timed_out() -> HostFacts {
        HostFacts {
            reclaim_timed_out: true,
            ..all_good()
        }
    }

    /// `Some(to)` for a transition, `None` for a refusal.
    type Row = (HostState, Option<HostState>);

    /// Every state must have a row: a table that misses one fails.
    fn check(event: &HostEvent, table: &[Row]) {
        for state in HostState::ALL {
            let want = table
                .iter()
                .find(|(s, _)| s == state)
                .unwrap_or_else(|| panic!("{event:?}: no row for {state:?}"))
                .1;
            let got = transition(*state, event);
            match (want, &got) {
                (Some(to), Ok(t)) => {
                    assert_eq!(t.to, to, "{event:?} from {state}");
                    assert_eq!(t.from, *state);
                    assert_eq!(t.event, event.kind());
                }
                (None, Err(e)) => {
                    assert_eq!(e.from, *state);
                    assert_eq!(e.refusal, Refusal::NoRule);
                    assert_eq!(e.to_string(), "no condition found to run transition");
                }
                _ => panic!("{event:?} from {state}: want {want:?}, got {got:?}"),
            }
        }
        assert_eq!(table.len(), HostState::ALL.len(), "{event:?}: extra rows");
    }

    fn table(moves: &[(&[HostState], HostState)]) -> Vec<Row> {
        HostState::ALL
            .iter()
            .map(|s| {
                let to = moves.iter().find(|(from, _)| from.contains(s)).map(|m| m.1);
                (*s, to)
            })
            .collect()
    }

    const POOL_AND_WAYS_IN: &[HostState] = &[
        DiscoveringUnbound,
        KnownUnbound,
        InsufficientUnbound,
        DisconnectedUnbound,
        Unbinding,
        UnbindingPendingUserAction,
        ReclaimingRebooting,
    ];

    fn register(r: Registration) -> HostEvent {
        HostEvent::Register(r)
    }

    #[test]
    fn register_unbound() {
        let t = table(&[
            (&[Unregistered], DiscoveringUnbound),
            (POOL_AND_WAYS_IN, DiscoveringUnbound),
            (
                &[
                    Binding,
                    Discovering,
                    Known,
                    Insufficient,
                    Disconnected,
                    PendingForInput,
                    ResettingPendingUserAction,
                    Resetting,
                ],
                Discovering,
            ),
            (&[PreparingForInstallation, PreparingSuccessful], Known),
            (&[Installing, InstallingInProgress, Error], Error),
        ]);
        // installed: a rule that refuses (409), checked below.
        let t: Vec<Row> = t.into_iter().filter(|(s, _)| *s != Installed).collect();
        let t = [t, vec![(Installed, None)]].concat();
        for (state, want) in &t {
            match (
                want,
                transition(*state, &register(Registration::bound(false))),
            ) {
                (Some(to), Ok(got)) => assert_eq!(got.to, *to, "{state}"),
                (None, Err(e)) if *state == Installed => assert_eq!(e.code(), 409),
                (None, Err(e)) => assert_eq!(e.refusal, Refusal::NoRule, "{state}"),
                (want, got) => panic!("{state}: want {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn register_while_preparing_keeps_the_inventory() {
        for from in [PreparingForInstallation, PreparingSuccessful] {
            let t = transition(from, &register(Registration::default())).unwrap();
            assert_eq!(t.to, Known);
            assert_eq!(
                t.status_info.as_deref(),
                Some("Host is ready to be installed")
            );
            assert!(!t.effects.contains(&ClearInventory) && !t.effects.contains(&ClearBootstrap));
            assert!(t.effects.contains(&ClearProgress));
        }
    }

    #[test]
    fn register_during_installation_and_after() {
        let plain = register(Registration::default());
        let t = transition(InstallingInProgress, &plain).unwrap();
        assert_eq!(
            (t.to, t.status_info.as_deref()),
            (
                Error,
                Some("The host unexpectedly restarted during the installation")
            )
        );
        let e = transition(Installed, &plain).unwrap_err();
        assert_eq!(e.code(), 409);
        assert_eq!(
            e.to_string(),
            "Host is trying to register after the cluster has already been installed. That most probably means that the host is booting from the installation ISO, and therefore not effectively joining the cluster. The request will be ignored. Fix the boot order and reboot the host."
        );
        assert_eq!(e.explain(&plain), "");
        // Booted the discovery image while rebooting into the installed system: wrong boot
        // order.
        let rebooting = register(Registration {
            in_reboot: true,
            installation_disk: "QEMU 1234 (sda, /dev/disk/by-id/wwn-1)".into(),
            installation_path: "/dev/disk/by-id/wwn-1".into(),
            ..Registration::default()
        });
        let t = transition(InstallingInProgress, &rebooting).unwrap();
        assert_eq!(t.to, InstallingPendingUserAction);
        assert_eq!(
            t.status_info.as_deref(),
            Some(
                "Expected the host to boot from disk, but it booted the installation image - please reboot and fix boot order to boot from disk QEMU 1234 (sda, /dev/disk/by-id/wwn-1)"
            )
        );
        let e = transition(InstallingPendingUserAction, &rebooting).unwrap_err();
        assert_eq!(
            (e.code(), e.to_string().as_str()),
            (
                403,
                "Host is required to be booted from disk /dev/disk/by-id/wwn-1"
            )
        );
        assert!(transition(InstallingPendingUserAction, &plain).is_err());
        let day2_done = register(Registration {
            day2_done: true,
            ..Registration::default()
        });
        assert_eq!(
            transition(AddedToExistingCluster, &day2_done).unwrap().to,
            InstallingPendingUserAction
        );
        assert!(transition(AddedToExistingCluster, &plain).is_err());
        // Resetting: ignored while rebooting.
        let t = transition(Resetting, &rebooting).unwrap();
        assert_eq!((t.to, t.status_info.clone()), (Resetting, None));
    }

    #[test]
    fn a_refusal_says_where_the_event_runs_from() {
        let e = transition(InsufficientUnbound, &HostEvent::Bind).unwrap_err();
        assert_eq!(
            e.explain(&HostEvent::Bind),
            "BindHost is allowed from known-unbound only; the host is insufficient-unbound"
        );
        let e = transition(KnownUnbound, &HostEvent::Unbind).unwrap_err();
        assert_eq!(
            e.explain(&HostEvent::Unbind),
            "UnbindHost is allowed from discovering, known, insufficient, disconnected, pending-for-input, preparing-for-installation, preparing-successful, preparing-failed, installing, installing-in-progress, installing-pending-user-action, installed, added-to-existing-cluster, error, cancelled; the host is known-unbound"
        );
        assert_eq!(allowed_from(&HostEvent::RebootingForReclaim), [Reclaiming]);
    }

    #[test]
    fn register_bound_differs_only_for_a_new_host() {
        let unbound = register(Registration::bound(false));
        let bound = register(Registration::bound(true));
        for state in HostState::ALL {
            let (a, b) = (transition(*state, &unbound), transition(*state, &bound));
            if *state == Unregistered {
                assert_eq!(b.unwrap().to, Discovering);
                assert_eq!(a.unwrap().to, DiscoveringUnbound);
            } else {
                assert_eq!(a.map(|t| t.to).ok(), b.map(|t| t.to).ok(), "{state}");
            }
        }
        let back = transition(Unbinding, &unbound).unwrap();
        assert_eq!(back.effects, REREGISTER_EFFECTS);
        assert_eq!(back.status_info.as_deref(), Some(status_info::DISCOVERING));
        assert!(transition(Unregistered, &bound).unwrap().effects.is_empty());
    }

    #[test]
    fn bind_only_from_known_unbound() {
        check(&HostEvent::Bind, &table(&[(&[KnownUnbound], Binding)]));
        let t = transition(KnownUnbound, &HostEvent::Bind).unwrap();
        assert_eq!(
            t.status_info.as_deref(),
            Some("Host is waiting to be bound to the cluster")
        );
        assert_eq!(t.effects, BIND_EFFECTS);
        assert!(t.effects.contains(&SetClusterId));
        assert!(!t.effects.contains(&ResetRole));
    }

    #[test]
    fn unbind() {
        let mut pending: Vec<HostState> = INSTALLING.to_vec();
        pending.extend([Installed, AddedToExistingCluster, Error, Cancelled]);
        check(
            &HostEvent::Unbind,
            &table(&[
                (BEFORE_INSTALLATION, Unbinding),
                (&pending, UnbindingPendingUserAction),
            ]),
        );
        for from in [Known, Installed] {
            let t = transition(from, &HostEvent::Unbind).unwrap();
            assert_eq!(
                t.status_info.as_deref(),
                Some("Host is waiting to be unbound from the cluster")
            );
            assert_eq!(t.effects, UNBIND_EFFECTS);
            for effect in [ClearClusterId, ResetKind, ResetRole, ClearInventory] {
                assert!(t.effects.contains(&effect), "{effect:?}");
            }
        }
    }

    #[test]
    fn reclaim() {
        check(
            &HostEvent::Reclaim,
            &table(&[
                (&[Installed, AddedToExistingCluster], Reclaiming),
                (BEFORE_INSTALLATION, Unbinding),
                (&[Error, Cancelled], UnbindingPendingUserAction),
            ]),
        );
        assert_eq!(
            transition(Installed, &HostEvent::Reclaim).unwrap().effects,
            UNBIND_EFFECTS
        );
    }

    #[test]
    fn rebooting_for_reclaim_and_its_failure() {
        check(
            &HostEvent::RebootingForReclaim,
            &table(&[(&[Reclaiming], ReclaimingRebooting)]),
        );
        let t = transition(Reclaiming, &HostEvent::RebootingForReclaim).unwrap();
        assert_eq!(
            t.status_info.as_deref(),
            Some("Host is rebooting into the discovery image")
        );
        assert!(t.effects.is_empty());
        check(
            &HostEvent::ReclaimFailed,
            &table(&[(
                &[Reclaiming, ReclaimingRebooting],
                UnbindingPendingUserAction,
            )]),
        );
    }

    /// The states a Refresh leaves alone whatever the facts.
    const STAYS: &[HostState] = &[
        Binding,
        PreparingForInstallation,
        PreparingSuccessful,
        Installing,
        InstallingInProgress,
        InstallingPendingUserAction,
        Installed,
        AddedToExistingCluster,
        Error,
        Cancelled,
        Resetting,
        ResettingPendingUserAction,
    ];

    /// A Refresh table: `moves`, and the states that stay unless a move says otherwise
    /// ([`STAYS`], and `unbinding` and the reclaim states, which only disconnection and the
    /// reclaim timeout move).
    fn stays_and(moves: &[(&[HostState], HostState)]) -> Vec<Row> {
        let mut rows = table(moves);
        for row in &mut rows {
            let stays = STAYS.contains(&row.0)
                || matches!(row.0, Unbinding | Reclaiming | ReclaimingRebooting);
            if stays && row.1.is_none() {
                row.1 = Some(row.0);
            }
        }
        rows
    }

    #[test]
    fn refresh_disconnected() {
        check(
            &HostEvent::Refresh(disconnected()),
            &stays_and(&[
                (
                    &[
                        DiscoveringUnbound,
                        KnownUnbound,
                        InsufficientUnbound,
                        DisconnectedUnbound,
                        Unbinding,
                    ],
                    DisconnectedUnbound,
                ),
                (
                    &[
                        Discovering,
                        Insufficient,
                        Known,
                        PendingForInput,
                        Disconnected,
                        PreparingFailed,
                        PreparingForInstallation,
                        PreparingSuccessful,
                    ],
                    Disconnected,
                ),
            ]),
        );
        let t = transition(KnownUnbound, &HostEvent::Refresh(disconnected())).unwrap();
        assert_eq!(
            t.status_info.as_deref(),
            Some("Host has stopped communicating with the installation service")
        );
        let t = transition(PreparingSuccessful, &HostEvent::Refresh(disconnected())).unwrap();
        assert_eq!(
            t.status_info.as_deref(),
            Some(
                "Host failed to install due to timeout while connecting to host during the preparation phase."
            )
        );
    }

    #[test]
    fn a_bound_host_whose_media_went_is_disconnected() {
        let facts = HostFacts {
            media_connected: false,
            ..all_good()
        };
        for from in [
            Discovering,
            Insufficient,
            Known,
            PendingForInput,
            Disconnected,
            PreparingFailed,
        ] {
            let t = transition(from, &HostEvent::Refresh(facts.clone())).unwrap();
            assert_eq!(t.to, Disconnected, "{from}");
            assert_eq!(
                t.status_info.as_deref(),
                Some("Host has stopped communicating with the installation service")
            );
        }
        let t = transition(PreparingForInstallation, &HostEvent::Refresh(facts)).unwrap();
        assert_eq!(t.to, Disconnected);
    }

    #[test]
    fn refresh_without_inventory() {
        check(
            &HostEvent::Refresh(no_inventory()),
            &stays_and(&[
                (
                    &[DiscoveringUnbound, DisconnectedUnbound],
                    DiscoveringUnbound,
                ),
                (&[Discovering, Disconnected], Discovering),
            ]),
        );
    }

    #[test]
    fn refresh_insufficient_hardware() {
        check(
            &HostEvent::Refresh(few_cores()),
            &stays_and(&[
                (POOL, InsufficientUnbound),
                (
                    &[
                        Disconnected,
                        Discovering,
                        Insufficient,
                        Known,
                        PendingForInput,
                    ],
                    Insufficient,
                ),
            ]),
        );
        let t = transition(KnownUnbound, &HostEvent::Refresh(few_cores())).unwrap();
        assert_eq!(
            t.status_info.as_deref(),
            Some("Host does not meet the minimum hardware requirements: a too small ; z too few")
        );
    }

    #[test]
    fn refresh_all_good() {
        let good = &[
            Disconnected,
            Insufficient,
            PendingForInput,
            Discovering,
            Known,
        ][..];
        check(
            &HostEvent::Refresh(all_good()),
            &stays_and(&[(POOL, KnownUnbound), (good, Known)]),
        );
        let t = transition(InsufficientUnbound, &HostEvent::Refresh(all_good())).unwrap();
        assert_eq!(
            t.status_info.as_deref(),
            Some("Host is ready to be bound to a cluster")
        );
        assert_eq!(
            transition(Discovering, &HostEvent::Refresh(all_good()))
                .unwrap()
                .status_info
                .as_deref(),
            Some("Host is ready to be installed")
        );
    }

    #[test]
    fn refresh_bound_host_not_ready_for_the_cluster() {
        let t = transition(Known, &HostEvent::Refresh(cluster_not_ready())).unwrap();
        assert_eq!(t.to, Insufficient);
        assert_eq!(
            t.status_info.as_deref(),
            Some(
                "Host cannot be installed due to following failing validation(s): Machine Network CIDR is undefined"
            )
        );
        // A pool host does not read the cluster-dependent verdict.
        let t = transition(KnownUnbound, &HostEvent::Refresh(cluster_not_ready())).unwrap();
        assert_eq!(t.to, KnownUnbound);
    }

    #[test]
    fn refresh_reclaim_timeout() {
        check(
            &HostEvent::Refresh(timed_out()),
            &stays_and(&[
                (POOL, KnownUnbound),
                (
                    &[Reclaiming, ReclaimingRebooting],
                    UnbindingPendingUserAction,
                ),
                (
                    &[
                        Disconnected,
                        Insufficient,
                        PendingForInput,
                        Discovering,
                        Known,
                    ],
                    Known,
                ),
            ]),
        );
        let t = transition(ReclaimingRebooting, &HostEvent::Refresh(timed_out())).unwrap();
        assert_eq!(t.effects, UNBIND_EFFECTS);
    }

    #[test]
    fn refresh_with_media_disconnected_has_no_pool_rule() {
        let facts = HostFacts {
            media_connected: false,
            ..all_good()
        };
        assert!(transition(KnownUnbound, &HostEvent::Refresh(facts.clone())).is_err());
        assert_eq!(pool_verdict(&facts), DiscoveringUnbound);
    }

    #[test]
    fn pool_verdicts() {
        assert_eq!(pool_verdict(&disconnected()), DisconnectedUnbound);
        assert_eq!(pool_verdict(&no_inventory()), DiscoveringUnbound);
        assert_eq!(pool_verdict(&few_cores()), InsufficientUnbound);
        let bad_name = HostFacts {
            hostname_valid: false,
            ..all_good()
        };
        assert_eq!(pool_verdict(&bad_name), InsufficientUnbound);
        assert_eq!(pool_verdict(&all_good()), KnownUnbound);
    }

    #[test]
    fn state_strings_round_trip_and_unknown_ones_are_explained() {
        for state in HostState::ALL {
            assert_eq!(state.as_str().parse::<HostState>(), Ok(*state));
            assert_eq!(state.to_string(), state.as_str());
        }
        assert_eq!(HostState::ALL.len(), 29);
        let err = "known-unbond".parse::<HostState>().unwrap_err().to_string();
        assert!(
            err.starts_with(
                "unknown host state \"known-unbond\" (did you mean known-unbound?); valid values: \"\", discovering-unbound,"
            ),
            "{err}"
        );
    }

    #[test]
    fn unbound_and_installing() {
        assert!(KnownUnbound.is_unbound() && Unbinding.is_unbound());
        assert!(!Binding.is_unbound() && !Known.is_unbound());
        assert!(InstallingInProgress.is_installing() && PreparingFailed.is_installing());
        assert!(!Installed.is_installing());
    }

    #[test]
    fn refresh_bound_host_without_the_machine_network_waits_for_input() {
        let facts = HostFacts {
            sufficient_for_install: false,
            input_fields_exist: false,
            failing_validations: vec!["Machine Network CIDR is undefined".into()],
            ..all_good()
        };
        for from in [
            Discovering,
            Known,
            Insufficient,
            PendingForInput,
            Disconnected,
        ] {
            let t = transition(from, &HostEvent::Refresh(facts.clone())).unwrap();
            assert_eq!(t.to, PendingForInput, "{from}");
            assert_eq!(
                t.status_info.as_deref(),
                Some("Waiting for user input: Machine Network CIDR is undefined")
            );
        }
        // A pool host does not read it; insufficient hardware comes first.
        let t = transition(KnownUnbound, &HostEvent::Refresh(facts.clone())).unwrap();
        assert_eq!(t.to, KnownUnbound);
        let small = HostFacts {
            has_min_memory: false,
            ..facts
        };
        assert_eq!(
            transition(Known, &HostEvent::Refresh(small)).unwrap().to,
            Insufficient
        );
    }

    #[test]
    fn cancel_installation() {
        check(
            &HostEvent::Cancel,
            &table(&[
                (
                    &[
                        InstallingPendingUserAction,
                        Installing,
                        InstallingInProgress,
                        Installed,
                        Error,
                    ],
                    Cancelled,
                ),
                (
                    &[PreparingForInstallation, PreparingSuccessful, Known],
                    Known,
                ),
            ]),
        );
        let t = transition(InstallingInProgress, &HostEvent::Cancel).unwrap();
        assert_eq!(
            t.status_info.as_deref(),
            Some("installation was canceled by user")
        );
        assert!(t.effects.is_empty());
        assert_eq!(
            transition(Known, &HostEvent::Cancel).unwrap().status_info,
            None
        );
        // preparing-failed has no rule upstream either.
        assert!(transition(PreparingFailed, &HostEvent::Cancel).is_err());
    }
}
