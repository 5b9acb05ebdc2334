//! Host validations and their gating for unbound hosts (spec C.5). assisted-service's
//! validation context loads the cluster when the host has one and the InfraEnv otherwise;
//! every validation that needs the cluster returns "success, suppress output" for an unbound
//! host, so it neither fails nor shows in `validationsInfo`. The pool state machine reads
//! four of the rest (min disks, cores, memory, hostname valid) with connectivity and the
//! inventory to decide `known-unbound` vs `insufficient-unbound`.
//!
//! [`validate_unbound`] runs the cluster-independent validations this increment has inputs
//! for (connected, media connected, inventory, minimum CPU cores, memory and disks, hostname)
//! against the InfraEnv-level minimums; messages are upstream's (`internal/host/validator.go`).

use std::collections::BTreeMap;

use super::state::{HostFacts, HostState, pool_verdict};
use super::types::{HostDisk, HostInventory, ValidationResult, ValidationsInfo};

/// The groups `validationsInfo` is keyed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Hardware,
    Network,
    Operators,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Hardware => "hardware",
            Category::Network => "network",
            Category::Operators => "operators",
        }
    }
}

/// One validation: its id (`models.HostValidationID`), its group, and whether it needs the
/// cluster (and is therefore suppressed for an unbound host).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Validation {
    pub id: &'static str,
    pub category: Category,
    pub cluster_dependent: bool,
}

const fn v(id: &'static str, category: Category, cluster_dependent: bool) -> Validation {
    Validation {
        id,
        category,
        cluster_dependent,
    }
}

use Category::{Hardware, Network, Operators};

/// The host validations, in upstream's order within each group. Cluster-dependent: those spec
/// C.5 lists as suppressed or short-circuiting on a nil cluster, and the operator ones.
pub const VALIDATIONS: &[Validation] = &[
    v("has-inventory", Hardware, false),
    v("has-min-cpu-cores", Hardware, false),
    v("has-min-memory", Hardware, false),
    v("has-min-valid-disks", Hardware, false),
    v("has-cpu-cores-for-role", Hardware, false),
    v("has-memory-for-role", Hardware, false),
    v("hostname-unique", Hardware, true),
    v("hostname-valid", Hardware, false),
    v("sufficient-installation-disk-speed", Hardware, false),
    v("compatible-with-cluster-platform", Hardware, true),
    v("disk-encryption-requirements-satisfied", Hardware, true),
    v("vsphere-disk-uuid-enabled", Hardware, true),
    v("inventory-not-truncated", Hardware, false),
    v("connected", Network, false),
    v("media-connected", Network, false),
    v("machine-cidr-defined", Network, true),
    v("belongs-to-machine-cidr", Network, true),
    v("ignition-downloadable", Network, true),
    v("belongs-to-majority-group", Network, true),
    v("valid-platform-network-settings", Network, true),
    v("ntp-synced", Network, false),
    v("time-synced-between-host-and-service", Network, false),
    v("container-images-available", Network, false),
    v(
        "sufficient-network-latency-requirement-for-role",
        Network,
        true,
    ),
    v("sufficient-packet-loss-requirement-for-role", Network, true),
    v("api-domain-name-resolved-correctly", Network, true),
    v("api-int-domain-name-resolved-correctly", Network, true),
    v("apps-domain-name-resolved-correctly", Network, true),
    v("release-domain-name-resolved-correctly", Network, true),
    v("dns-wildcard-not-configured", Network, true),
    v("non-overlapping-subnets", Network, true),
    v("no-ip-collisions-in-network", Network, true),
    v("no-iscsi-nic-belongs-to-machine-cidr", Network, true),
    v("mtu-valid", Network, true),
    v("lso-requirements-satisfied", Operators, true),
    v("odf-requirements-satisfied", Operators, true),
    v("cnv-requirements-satisfied", Operators, true),
    v("lvm-requirements-satisfied", Operators, true),
    v("mce-requirements-satisfied", Operators, true),
];

/// The validation with this id.
pub fn lookup(id: &str) -> Option<&'static Validation> {
    VALIDATIONS.iter().find(|v| v.id == id)
}

/// Whether an unbound host shows this validation: cluster-dependent ones are suppressed.
pub fn shown_for_unbound(id: &str) -> bool {
    lookup(id).is_some_and(|v| !v.cluster_dependent)
}

/// A validation's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Success,
    Failure,
    /// Not enough information yet (no inventory).
    Pending,
    Error,
    Disabled,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::Failure => "failure",
            Status::Pending => "pending",
            Status::Error => "error",
            Status::Disabled => "disabled",
        }
    }
}

/// Host requirements of an InfraEnv's pool: the least any role needs. Defaults: the
/// `worker` entry of assisted-service's default hardware requirements (2 cores, 8192 MiB,
/// 100 GB disks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requirements {
    pub min_cpu_cores: i64,
    pub min_ram_mib: i64,
    /// Decimal gigabytes, as upstream's `disk_size_gb`.
    pub min_disk_size_gb: i64,
}

impl Default for Requirements {
    fn default() -> Self {
        Requirements {
            min_cpu_cores: 2,
            min_ram_mib: 8192,
            min_disk_size_gb: 100,
        }
    }
}

/// What is known about an unbound host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observation<'a> {
    pub connected: bool,
    pub media_connected: bool,
    pub inventory: Option<&'a HostInventory>,
    /// The Agent's `spec.hostname`; when set it is the hostname validated.
    pub requested_hostname: &'a str,
}

/// [`validate_unbound`]'s answer: what `status.validationsInfo` shows, the facts the pool
/// state machine reads, and where those facts put the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Validated {
    pub info: ValidationsInfo,
    pub facts: HostFacts,
    pub verdict: HostState,
}

/// assisted-service's `ForbiddenHostnames`: names a host must not keep.
pub const FORBIDDEN_HOSTNAMES: &[&str] = &[
    "localhost",
    "localhost.localdomain",
    "localhost4",
    "localhost4.localdomain4",
    "localhost6",
    "localhost6.localdomain6",
];

/// Upstream's `HostnamePattern`.
const HOSTNAME_PATTERN: &str = r"^[a-z0-9][a-z0-9-]{0,62}(?:[.][a-z0-9-]{1,63})*$";

/// The media-connected failure message (upstream's `statusInfoMediaDisconnected`).
pub const MEDIA_DISCONNECTED: &str = "Unable to read from the discovery media. It was either disconnected or poor network conditions prevented it from being read. Try using the minimal ISO option and be sure to keep the media connected until the installation is completed";

/// Runs an unbound host's validations against the pool's requirements. Only
/// cluster-independent validations appear; every result is upstream's message.
pub fn validate_unbound(observation: &Observation, requirements: &Requirements) -> Validated {
    let inventory = observation.inventory;
    let hostname = match (observation.requested_hostname, inventory) {
        ("", Some(inventory)) => inventory.hostname.as_str(),
        (requested, _) => requested,
    };
    let with_inventory = |check: &dyn Fn(&HostInventory) -> bool| match inventory {
        None => Status::Pending,
        Some(inventory) => success_if(check(inventory)),
    };
    let cores = with_inventory(&|i| i.cpu.count >= requirements.min_cpu_cores);
    let memory = with_inventory(&|i| i.memory.physical_bytes >= mib(requirements.min_ram_mib));
    let disks = with_inventory(&|i| i.disks.iter().any(|d| eligible(d, requirements)));
    let hostname_ok = with_inventory(&|_| hostname_valid(hostname));
    let connected = success_if(observation.connected);
    let media = success_if(observation.media_connected);
    let has_inventory = success_if(inventory.is_some());

    let found = |f: &dyn Fn(&HostInventory) -> String| inventory.map(f).unwrap_or_default();
    let results = [
        (
            "has-inventory",
            has_inventory,
            message(
                has_inventory,
                "Valid inventory exists for the host",
                "Inventory has not been received for the host".into(),
            ),
        ),
        (
            "has-min-cpu-cores",
            cores,
            message(
                cores,
                "Sufficient CPU cores",
                found(&|i| {
                    format!(
                        "The host is not eligible to participate in Openshift Cluster because the minimum required CPU cores for any role is {}, found only {}",
                        requirements.min_cpu_cores, i.cpu.count
                    )
                }),
            ),
        ),
        (
            "has-min-memory",
            memory,
            message(
                memory,
                "Sufficient minimum RAM",
                found(&|i| {
                    format!(
                        "The host is not eligible to participate in Openshift Cluster because the minimum required RAM for any role is {}, found only {}",
                        bytes_to_string(mib(requirements.min_ram_mib)),
                        bytes_to_string(i.memory.physical_bytes)
                    )
                }),
            ),
        ),
        (
            "has-min-valid-disks",
            disks,
            message(
                disks,
                "Sufficient disk capacity",
                "No eligible disks were found, please check specific disks to see why they are not eligible".into(),
            ),
        ),
        (
            "hostname-valid",
            hostname_ok,
            match hostname_ok {
                Status::Success => format!("Hostname {hostname} is allowed"),
                Status::Pending => "Missing inventory".into(),
                _ => format!("Hostname {hostname} is forbidden"),
            },
        ),
        (
            "connected",
            connected,
            message(connected, "Host is connected", "Host is disconnected".into()),
        ),
        (
            "media-connected",
            media,
            message(media, "Media device is connected", MEDIA_DISCONNECTED.into()),
        ),
    ];

    let mut info: ValidationsInfo = BTreeMap::new();
    for (id, status, message) in &results {
        let category = lookup(id).map_or(Hardware, |v| v.category);
        info.entry(category.as_str().to_owned())
            .or_default()
            .push(ValidationResult {
                id: (*id).to_owned(),
                status: status.as_str().to_owned(),
                message: message.clone(),
            });
    }
    let passed = |id: &str| {
        results
            .iter()
            .any(|(i, s, _)| *i == id && *s == Status::Success)
    };
    let facts = HostFacts {
        connected: observation.connected,
        media_connected: observation.media_connected,
        has_inventory: inventory.is_some(),
        has_min_valid_disks: passed("has-min-valid-disks"),
        has_min_cpu_cores: passed("has-min-cpu-cores"),
        has_min_memory: passed("has-min-memory"),
        hostname_valid: passed("hostname-valid"),
        sufficient_for_install: false,
        input_fields_exist: true,
        failing_validations: (results.iter())
            .filter(|(_, status, _)| *status == Status::Failure)
            .map(|(_, _, message)| message.clone())
            .collect(),
        reclaim_timed_out: false,
    };
    let verdict = pool_verdict(&facts);
    Validated {
        info,
        facts,
        verdict,
    }
}

/// assisted-service's default hardware requirements of a role (`HW_VALIDATOR_REQUIREMENTS`):
/// a control-plane host needs 4 cores and 16 GiB, a worker (or a host whose role is still
/// `auto-assign`) 2 cores and 8 GiB; both a 100 GB disk.
pub fn role_requirements(role: &str) -> Requirements {
    match role {
        "master" | "bootstrap" => Requirements {
            min_cpu_cores: 4,
            min_ram_mib: 16384,
            min_disk_size_gb: 100,
        },
        _ => Requirements::default(),
    }
}

/// What a bound host's cluster-dependent validations read: the cluster's AgentClusterInstall,
/// the other hosts bound to it, and the host's role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterContext<'a> {
    /// `spec.networking.machineNetwork[].cidr`.
    pub machine_networks: &'a [String],
    /// `spec.networking.userManagedNetworking`.
    pub user_managed_networking: bool,
    /// The host is added to an installed cluster (day 2): no machine network is needed.
    pub day2: bool,
    /// The hostnames of the other hosts bound to the same cluster.
    pub other_hostnames: &'a [String],
    /// The Agent's `spec.role`; empty reads as `auto-assign`.
    pub role: &'a str,
}

/// The validations of a bound host: [`validate_unbound`]'s, and the cluster-dependent ones
/// `cvo` has inputs for (role minimums, hostname uniqueness, the machine network). The facts
/// say whether the host can be installed (`known`) and whether user input is missing (the
/// machine network: `pending-for-input`).
pub fn validate_bound(
    observation: &Observation,
    pool: &Requirements,
    cluster: &ClusterContext,
) -> Validated {
    let mut validated = validate_unbound(observation, pool);
    let results = cluster_results(observation, cluster);
    for (id, status, message) in &results {
        let category = lookup(id).map_or(Network, |v| v.category);
        validated
            .info
            .entry(category.as_str().to_owned())
            .or_default()
            .push(ValidationResult {
                id: (*id).to_owned(),
                status: status.as_str().to_owned(),
                message: message.clone(),
            });
    }
    let order = |id: &str| VALIDATIONS.iter().position(|v| v.id == id);
    for list in validated.info.values_mut() {
        list.sort_by_key(|r| order(&r.id));
    }
    let facts = &mut validated.facts;
    facts.failing_validations.extend(
        (results.iter())
            .filter(|(_, status, _)| *status == Status::Failure)
            .map(|(_, _, message)| message.clone()),
    );
    facts.sufficient_for_install = results.iter().all(|(_, s, _)| *s == Status::Success);
    facts.input_fields_exist = results
        .iter()
        .any(|(id, s, _)| *id == "machine-cidr-defined" && *s == Status::Success);
    validated
}

type Outcome = (&'static str, Status, String);

/// The cluster-dependent results, with upstream's messages.
fn cluster_results(observation: &Observation, cluster: &ClusterContext) -> Vec<Outcome> {
    let inventory = observation.inventory;
    let role = match cluster.role {
        "" => super::keys::ROLE_AUTO_ASSIGN,
        role => role,
    };
    let needs = role_requirements(role);
    let hostname = match (observation.requested_hostname, inventory) {
        ("", Some(inventory)) => inventory.hostname.as_str(),
        (requested, _) => requested,
    };
    let mut out: Vec<Outcome> = Vec::new();
    match inventory {
        None => {
            for id in ["has-cpu-cores-for-role", "has-memory-for-role"] {
                out.push((id, Status::Pending, "Missing inventory or role".into()));
            }
            out.push((
                "hostname-unique",
                Status::Pending,
                "Missing inventory".into(),
            ));
        }
        Some(inv) => {
            let cores = inv.cpu.count >= needs.min_cpu_cores;
            out.push((
                "has-cpu-cores-for-role",
                success_if(cores),
                match cores {
                    true => format!("Sufficient CPU cores for role {role}"),
                    false => format!(
                        "Require at least {} CPU cores for {role} role, found only {}",
                        needs.min_cpu_cores, inv.cpu.count
                    ),
                },
            ));
            let memory = inv.memory.physical_bytes >= mib(needs.min_ram_mib);
            out.push((
                "has-memory-for-role",
                success_if(memory),
                match memory {
                    true => format!("Sufficient RAM for role {role}"),
                    false => format!(
                        "Require at least {} RAM for role {role}, found only {}",
                        bytes_to_string(mib(needs.min_ram_mib)),
                        bytes_to_string(inv.memory.physical_bytes)
                    ),
                },
            ));
            let unique = !cluster.other_hostnames.iter().any(|h| h == hostname);
            out.push((
                "hostname-unique",
                success_if(unique),
                match unique {
                    true => format!("Hostname {hostname} is unique in cluster"),
                    false => format!("Hostname {hostname} is not unique in cluster"),
                },
            ));
        }
    }
    let networks_defined = !cluster.machine_networks.is_empty();
    let (defined, defined_message) = if cluster.user_managed_networking {
        (
            Status::Success,
            "No Machine Network CIDR needed: User Managed Networking",
        )
    } else if cluster.day2 {
        (
            Status::Success,
            "No Machine Network CIDR needed: Day2 cluster",
        )
    } else if networks_defined {
        (Status::Success, "Machine Network CIDR is defined")
    } else {
        (
            Status::Failure,
            "Machine Network CIDR is undefined; the Machine Network CIDR can be defined by setting either the API or Ingress virtual IPs",
        )
    };
    out.push(("machine-cidr-defined", defined, defined_message.into()));
    let belongs = if cluster.day2 {
        (
            Status::Success,
            "No machine network CIDR validation needed: Day2 cluster",
        )
    } else if cluster.user_managed_networking {
        (
            Status::Success,
            "No machine network CIDR validation needed: User Managed Networking",
        )
    } else {
        match inventory {
            Some(inv) if networks_defined => {
                let all = (cluster.machine_networks.iter()).all(|cidr| host_in_network(inv, cidr));
                match all {
                    true => (Status::Success, "Host belongs to all machine network CIDRs"),
                    false => (
                        Status::Failure,
                        "Host does not belong to machine network CIDRs. Verify that the host belongs to every CIDR listed under machine networks",
                    ),
                }
            }
            _ => (Status::Pending, "Missing inventory or machine network CIDR"),
        }
    };
    out.push(("belongs-to-machine-cidr", belongs.0, belongs.1.into()));
    out
}

/// Whether one of the host's interface addresses is in `cidr` (an unreadable CIDR contains
/// nothing).
fn host_in_network(inventory: &HostInventory, cidr: &str) -> bool {
    let Some(network) = parse_cidr(cidr) else {
        return false;
    };
    (inventory.interfaces.iter())
        .flat_map(|i| i.ipv4_addresses.iter().chain(&i.ipv6_addresses))
        .filter_map(|a| parse_cidr(a))
        .any(|(address, _)| network_contains(network, address))
}

/// `ADDRESS/PREFIX` (a bare address is a host route). `core::net`: address values only, no
/// sockets.
fn parse_cidr(text: &str) -> Option<(core::net::IpAddr, u8)> {
    let (address, prefix) = match text.split_once('/') {
        Some((a, p)) => (a, p.parse().ok()?),
        None => (text, 128),
    };
    let address: core::net::IpAddr = address.parse().ok()?;
    let max = if address.is_ipv4() { 32 } else { 128 };
    Some((address, prefix.min(max)))
}

fn network_contains(
    (network, prefix): (core::net::IpAddr, u8),
    address: core::net::IpAddr,
) -> bool {
    use core::net::IpAddr::{V4, V6};
    match (network, address) {
        (V4(n), V4(a)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(n) & mask == u32::from(a) & mask
        }
        (V6(n), V6(a)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(n) & mask == u128::from(a) & mask
        }
        _ => false,
    }
}

fn success_if(ok: bool) -> Status {
    if ok { Status::Success } else { Status::Failure }
}

/// Upstream's three-way message: success, failure, or `Missing inventory` while pending.
fn message(status: Status, success: &str, failure: String) -> String {
    match status {
        Status::Success => success.to_owned(),
        Status::Pending => "Missing inventory".to_owned(),
        _ => failure,
    }
}

fn mib(value: i64) -> i64 {
    value.saturating_mul(1024 * 1024)
}

/// A disk the installation could use: big enough, and not reported ineligible (the discovery
/// agent's `installationEligibility.notEligibleReasons`).
fn eligible(disk: &HostDisk, requirements: &Requirements) -> bool {
    disk.size_bytes >= requirements.min_disk_size_gb.saturating_mul(1_000_000_000)
        && disk
            .installation_eligibility
            .not_eligible_reasons
            .is_empty()
}

/// A hostname a host may keep: not one of [`FORBIDDEN_HOSTNAMES`], and upstream's pattern
/// (lower case DNS labels).
pub fn hostname_valid(hostname: &str) -> bool {
    static PATTERN: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let pattern = PATTERN.get_or_init(|| regex::Regex::new(HOSTNAME_PATTERN).expect("pattern"));
    !FORBIDDEN_HOSTNAMES.contains(&hostname) && pattern.is_match(hostname)
}

/// A byte count as assisted-service's `conversions.BytesToString` (go-units `BytesSize`:
/// binary units, `%.4g`): `8GiB`, `15.62GiB`.
pub fn bytes_to_string(bytes: i64) -> String {
    const UNITS: [&str; 9] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"];
    let mut size = bytes as f64;
    let mut unit = 0;
    while size >= 1024.0 && unit < UNITS.len() - 1 {
        size /= 1024.0;
        unit += 1;
    }
    format!("{}{}", go_g4(size), UNITS[unit])
}

/// Go's `%.4g` for a value below 10⁴: four significant digits, trailing zeros dropped.
fn go_g4(value: f64) -> String {
    let scientific = format!("{value:.3e}");
    let exponent: i32 = scientific
        .split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    let decimals = (3 - exponent).max(0) as usize;
    let fixed = format!("{value:.decimals$}");
    match fixed.contains('.') {
        true => fixed.trim_end_matches('0').trim_end_matches('.').to_owned(),
        false => fixed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::agents::types::{HostCpu, HostInstallationEligibility, HostMemory};

    const GIB: i64 = 1024 * 1024 * 1024;

    fn inventory(cores: i64, ram_gib: i64, disk_gb: i64, hostname: &str) -> HostInventory {
        HostInventory {
            hostname: hostname.to_owned(),
            cpu: HostCpu {
                count: cores,
                ..HostCpu::default()
            },
            memory: HostMemory {
                physical_bytes: ram_gib * GIB,
                usable_bytes: ram_gib * GIB,
            },
            disks: vec![HostDisk {
                id: "/dev/sda".into(),
                size_bytes: disk_gb * 1_000_000_000,
                ..HostDisk::default()
            }],
            ..HostInventory::default()
        }
    }

    fn run(inventory: Option<&HostInventory>, connected: bool) -> Validated {
        let observation = Observation {
            connected,
            media_connected: true,
            inventory,
            requested_hostname: "",
        };
        validate_unbound(&observation, &Requirements::default())
    }

    fn result<'a>(v: &'a Validated, id: &str) -> &'a ValidationResult {
        (v.info.values().flatten())
            .find(|r| r.id == id)
            .unwrap_or_else(|| panic!("no {id} in {:?}", v.info))
    }

    #[test]
    fn a_sufficient_host_is_known_unbound() {
        let inv = inventory(4, 16, 120, "worker-0");
        let v = run(Some(&inv), true);
        assert_eq!(v.verdict, HostState::KnownUnbound);
        assert!(v.facts.sufficient_to_be_bound());
        assert!(v.facts.failing_validations.is_empty());
        assert_eq!(
            result(&v, "has-min-cpu-cores").message,
            "Sufficient CPU cores"
        );
        assert_eq!(
            result(&v, "hostname-valid").message,
            "Hostname worker-0 is allowed"
        );
        assert_eq!(result(&v, "connected").message, "Host is connected");
        let hardware: Vec<&str> = v.info["hardware"].iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            hardware,
            [
                "has-inventory",
                "has-min-cpu-cores",
                "has-min-memory",
                "has-min-valid-disks",
                "hostname-valid"
            ]
        );
        assert_eq!(v.info.keys().collect::<Vec<_>>(), ["hardware", "network"]);
    }

    #[test]
    fn an_unbound_host_shows_no_cluster_dependent_validation() {
        let inv = inventory(1, 2, 10, "localhost");
        let v = run(Some(&inv), true);
        for r in v.info.values().flatten() {
            assert!(shown_for_unbound(&r.id), "{} shown", r.id);
        }
        assert!(!shown_for_unbound("hostname-unique"));
        assert!(!shown_for_unbound("belongs-to-majority-group"));
        assert!(!shown_for_unbound("odf-requirements-satisfied"));
        assert!(shown_for_unbound("has-min-memory"));
        assert!(!shown_for_unbound("no-such-validation"));
    }

    #[test]
    fn a_small_host_is_insufficient_unbound_with_upstreams_messages() {
        let inv = inventory(1, 4, 50, "localhost");
        let v = run(Some(&inv), true);
        assert_eq!(v.verdict, HostState::InsufficientUnbound);
        assert_eq!(
            result(&v, "has-min-cpu-cores").message,
            "The host is not eligible to participate in Openshift Cluster because the minimum required CPU cores for any role is 2, found only 1"
        );
        assert_eq!(
            result(&v, "has-min-memory").message,
            "The host is not eligible to participate in Openshift Cluster because the minimum required RAM for any role is 8GiB, found only 4GiB"
        );
        assert_eq!(
            result(&v, "has-min-valid-disks").message,
            "No eligible disks were found, please check specific disks to see why they are not eligible"
        );
        assert_eq!(
            result(&v, "hostname-valid").message,
            "Hostname localhost is forbidden"
        );
        assert_eq!(v.facts.failing_validations.len(), 4);
        assert!(!v.facts.has_min_cpu_cores && !v.facts.hostname_valid);
    }

    #[test]
    fn without_inventory_the_hardware_checks_are_pending() {
        let v = run(None, true);
        assert_eq!(v.verdict, HostState::DiscoveringUnbound);
        assert_eq!(result(&v, "has-min-cpu-cores").status, "pending");
        assert_eq!(result(&v, "has-min-cpu-cores").message, "Missing inventory");
        assert_eq!(result(&v, "has-inventory").status, "failure");
        assert_eq!(
            v.facts.failing_validations,
            ["Inventory has not been received for the host"]
        );
        let v = run(None, false);
        assert_eq!(v.verdict, HostState::DisconnectedUnbound);
        assert_eq!(result(&v, "connected").message, "Host is disconnected");
    }

    #[test]
    fn the_requested_hostname_wins_and_ineligible_disks_do_not_count() {
        let run = |inventory: &HostInventory| {
            let observation = Observation {
                connected: true,
                media_connected: true,
                inventory: Some(inventory),
                requested_hostname: "node-1.example.com",
            };
            validate_unbound(&observation, &Requirements::default()).verdict
        };
        let mut inv = inventory(4, 16, 200, "localhost");
        assert_eq!(run(&inv), HostState::KnownUnbound);
        inv.disks[0].installation_eligibility = HostInstallationEligibility {
            eligible: false,
            not_eligible_reasons: vec!["Disk is removable".into()],
        };
        assert_eq!(run(&inv), HostState::InsufficientUnbound);
    }

    #[test]
    fn hostnames() {
        assert!(hostname_valid("worker-0.example.com"));
        assert!(!hostname_valid("localhost.localdomain"));
        assert!(!hostname_valid("Worker"));
        assert!(!hostname_valid(""));
        assert!(!hostname_valid("-a"));
    }

    #[test]
    fn byte_sizes_read_as_go_units_writes_them() {
        assert_eq!(bytes_to_string(8 * GIB), "8GiB");
        assert_eq!(bytes_to_string(16 * GIB + GIB / 2), "16.5GiB");
        assert_eq!(bytes_to_string(15_625 * GIB / 1000), "15.62GiB");
        assert_eq!(bytes_to_string(512), "512B");
        assert_eq!(bytes_to_string(1023 * 1024 + 1000), "1024KiB");
        assert_eq!(bytes_to_string(0), "0B");
    }

    #[test]
    fn every_validation_is_listed_once() {
        let mut ids: Vec<&str> = VALIDATIONS.iter().map(|v| v.id).collect();
        ids.sort();
        let before = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), before);
    }

    fn on_network(mut inv: HostInventory, address: &str) -> HostInventory {
        inv.interfaces = vec![crate::components::agents::types::HostInterface {
            name: "eth0".into(),
            ipv4_addresses: vec![address.into()],
            ..Default::default()
        }];
        inv
    }

    fn bound(inv: Option<&HostInventory>, cluster: &ClusterContext) -> Validated {
        let observation = Observation {
            connected: true,
            media_connected: true,
            inventory: inv,
            requested_hostname: "",
        };
        validate_bound(&observation, &Requirements::default(), cluster)
    }

    const NETWORK: &[String] = &[];

    fn cluster<'a>(
        networks: &'a [String],
        others: &'a [String],
        role: &'a str,
    ) -> ClusterContext<'a> {
        ClusterContext {
            machine_networks: networks,
            user_managed_networking: false,
            day2: false,
            other_hostnames: others,
            role,
        }
    }

    #[test]
    fn a_bound_host_runs_the_cluster_dependent_validations() {
        let networks = ["192.168.0.0/16".to_owned()];
        let inv = on_network(inventory(4, 16, 120, "worker-0"), "192.168.1.7/16");
        let v = bound(Some(&inv), &cluster(&networks, &[], ""));
        assert!(v.facts.sufficient_for_install && v.facts.input_fields_exist);
        assert!(v.facts.failing_validations.is_empty());
        for (id, message) in [
            (
                "has-cpu-cores-for-role",
                "Sufficient CPU cores for role auto-assign",
            ),
            ("has-memory-for-role", "Sufficient RAM for role auto-assign"),
            ("hostname-unique", "Hostname worker-0 is unique in cluster"),
            ("machine-cidr-defined", "Machine Network CIDR is defined"),
            (
                "belongs-to-machine-cidr",
                "Host belongs to all machine network CIDRs",
            ),
        ] {
            assert_eq!(result(&v, id).message, message, "{id}");
            assert_eq!(result(&v, id).status, "success", "{id}");
            assert!(!shown_for_unbound(id) || id.ends_with("-for-role"), "{id}");
        }
        let hardware: Vec<&str> = v.info["hardware"].iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            hardware,
            [
                "has-inventory",
                "has-min-cpu-cores",
                "has-min-memory",
                "has-min-valid-disks",
                "has-cpu-cores-for-role",
                "has-memory-for-role",
                "hostname-unique",
                "hostname-valid"
            ]
        );
    }

    #[test]
    fn bound_failures_with_upstreams_messages() {
        let networks = ["10.0.0.0/24".to_owned()];
        let others = ["worker-0".to_owned()];
        // A master needs 4 cores and 16 GiB; this host is on another network and its name
        // is taken.
        let inv = on_network(inventory(2, 8, 120, "worker-0"), "192.168.1.7/16");
        let v = bound(Some(&inv), &cluster(&networks, &others, "master"));
        let want = [
            (
                "has-cpu-cores-for-role",
                "Require at least 4 CPU cores for master role, found only 2",
            ),
            (
                "has-memory-for-role",
                "Require at least 16GiB RAM for role master, found only 8GiB",
            ),
            (
                "hostname-unique",
                "Hostname worker-0 is not unique in cluster",
            ),
            (
                "belongs-to-machine-cidr",
                "Host does not belong to machine network CIDRs. Verify that the host belongs to every CIDR listed under machine networks",
            ),
        ];
        for (id, message) in want {
            assert_eq!(result(&v, id).status, "failure", "{id}");
            assert_eq!(result(&v, id).message, message, "{id}");
        }
        assert!(!v.facts.sufficient_for_install);
        assert!(v.facts.input_fields_exist);
        assert_eq!(v.facts.failing_validations.len(), 4);
        // The pool minimums still pass: only the cluster says no.
        assert!(v.facts.sufficient_to_be_bound());
    }

    #[test]
    fn machine_network_undefined_is_missing_input_unless_not_needed() {
        let inv = on_network(inventory(4, 16, 120, "w"), "192.168.1.7/16");
        let v = bound(Some(&inv), &cluster(NETWORK, &[], "worker"));
        assert_eq!(result(&v, "machine-cidr-defined").status, "failure");
        assert_eq!(
            result(&v, "machine-cidr-defined").message,
            "Machine Network CIDR is undefined; the Machine Network CIDR can be defined by setting either the API or Ingress virtual IPs"
        );
        assert_eq!(result(&v, "belongs-to-machine-cidr").status, "pending");
        assert_eq!(
            result(&v, "belongs-to-machine-cidr").message,
            "Missing inventory or machine network CIDR"
        );
        assert!(!v.facts.input_fields_exist && !v.facts.sufficient_for_install);
        let umn = ClusterContext {
            user_managed_networking: true,
            ..cluster(NETWORK, &[], "worker")
        };
        let v = bound(Some(&inv), &umn);
        assert_eq!(
            result(&v, "machine-cidr-defined").message,
            "No Machine Network CIDR needed: User Managed Networking"
        );
        assert_eq!(
            result(&v, "belongs-to-machine-cidr").message,
            "No machine network CIDR validation needed: User Managed Networking"
        );
        assert!(v.facts.sufficient_for_install);
        let day2 = ClusterContext {
            day2: true,
            ..cluster(NETWORK, &[], "worker")
        };
        let v = bound(Some(&inv), &day2);
        assert_eq!(
            result(&v, "machine-cidr-defined").message,
            "No Machine Network CIDR needed: Day2 cluster"
        );
        assert!(v.facts.sufficient_for_install);
        // Without inventory the host-side checks wait.
        let v = bound(None, &cluster(NETWORK, &[], "worker"));
        assert_eq!(
            result(&v, "has-cpu-cores-for-role").message,
            "Missing inventory or role"
        );
        assert_eq!(result(&v, "hostname-unique").status, "pending");
    }

    #[test]
    fn networks_contain_addresses() {
        let net = |c: &str| parse_cidr(c).unwrap();
        let addr = |a: &str| parse_cidr(a).unwrap().0;
        assert!(network_contains(
            net("192.168.0.0/16"),
            addr("192.168.200.1/24")
        ));
        assert!(!network_contains(
            net("192.168.0.0/24"),
            addr("192.168.1.1")
        ));
        assert!(network_contains(net("0.0.0.0/0"), addr("10.1.2.3")));
        assert!(network_contains(net("fd00::/64"), addr("fd00::5/64")));
        assert!(!network_contains(net("fd00::/64"), addr("10.0.0.1")));
        assert!(parse_cidr("not-a-network").is_none());
        assert!(parse_cidr("10.0.0.0/x").is_none());
    }
}
