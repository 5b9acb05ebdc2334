//! The simulated discovery agent's decisions (pure): the inventory a simulated host posts,
//! and whether its discovery agent runs at all. The registration itself and the next step
//! (`exit`) are the service's: [`super::reconcile::register_host`] and
//! [`super::reconcile::next_step`].

use super::state::HostState;
use super::types::{
    HostCpu, HostDisk, HostInstallationEligibility, HostInterface, HostInventory, HostMemory,
    HostSystemVendor,
};

/// The hardware of a simulated host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hardware {
    pub cpu_cores: i64,
    pub memory_gib: i64,
    pub disk_gib: i64,
}

/// The inventory a simulated host reports: its cores, memory, one disk and one NIC, its name
/// as hostname (`index` numbers its MAC and IP address).
pub fn inventory(hostname: &str, index: u32, hw: Hardware) -> HostInventory {
    let gib = |n: i64| n.saturating_mul(1 << 30);
    let (hi, lo) = ((index >> 8) & 0xff, index & 0xff);
    HostInventory {
        hostname: hostname.to_owned(),
        cpu: HostCpu {
            count: hw.cpu_cores,
            architecture: "x86_64".into(),
            model_name: "cvo simulated CPU".into(),
            clock_megahertz: 2400,
            flags: vec!["vmx".into()],
        },
        memory: HostMemory {
            physical_bytes: gib(hw.memory_gib),
            usable_bytes: gib(hw.memory_gib),
        },
        disks: vec![HostDisk {
            id: "/dev/disk/by-id/wwn-0x5000c500a0000001".into(),
            by_id: "/dev/disk/by-id/wwn-0x5000c500a0000001".into(),
            name: "sda".into(),
            path: "/dev/sda".into(),
            drive_type: "SSD".into(),
            size_bytes: gib(hw.disk_gib),
            installation_eligibility: HostInstallationEligibility {
                eligible: true,
                not_eligible_reasons: Vec::new(),
            },
            ..HostDisk::default()
        }],
        interfaces: vec![HostInterface {
            name: "eth0".into(),
            mac_address: format!("52:54:00:00:{hi:02x}:{lo:02x}"),
            ipv4_addresses: vec![format!("192.168.{hi}.{lo}/16")],
            has_carrier: true,
            mtu: 1500,
            speed_mbps: 10000,
            ..HostInterface::default()
        }],
        system_vendor: HostSystemVendor {
            manufacturer: "cvo".into(),
            product_name: "simulated host".into(),
            r#virtual: true,
            ..HostSystemVendor::default()
        },
        ..HostInventory::default()
    }
}

/// Whether the host runs from its installation disk, not from the discovery image: then no
/// discovery agent runs on it (it neither checks in nor obeys steps) until it is booted into
/// the discovery image again (restarting the simulator does that).
pub fn booted_from_disk(state: HostState) -> bool {
    use HostState::*;
    state.is_installing()
        || matches!(
            state,
            Installed | AddedToExistingCluster | UnbindingPendingUserAction
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::agents::validation::{Observation, Requirements, validate_unbound};

    fn verdict(hw: Hardware) -> HostState {
        let inv = inventory("host-1", 1, hw);
        let observation = Observation {
            connected: true,
            media_connected: true,
            inventory: Some(&inv),
            requested_hostname: "",
        };
        validate_unbound(&observation, &Requirements::default()).verdict
    }

    #[test]
    fn defaults_pass_the_pool_minimums_and_small_hosts_do_not() {
        let ok = Hardware {
            cpu_cores: 4,
            memory_gib: 16,
            disk_gib: 120,
        };
        assert_eq!(verdict(ok), HostState::KnownUnbound);
        for small in [
            Hardware { cpu_cores: 1, ..ok },
            Hardware {
                memory_gib: 4,
                ..ok
            },
            Hardware { disk_gib: 50, ..ok },
        ] {
            assert_eq!(verdict(small), HostState::InsufficientUnbound, "{small:?}");
        }
    }

    #[test]
    fn installed_hosts_run_from_disk() {
        assert!(booted_from_disk(HostState::Installed));
        assert!(booted_from_disk(HostState::InstallingInProgress));
        assert!(booted_from_disk(HostState::UnbindingPendingUserAction));
        assert!(!booted_from_disk(HostState::Binding));
        assert!(!booted_from_disk(HostState::KnownUnbound));
    }
}
