//! Which architecture an executable is for, from its ELF header: `cvo payload new` checks that
//! the binary it puts in an image runs on the platform the image says. Read by hand: five
//! fixed header fields, where an ELF crate would parse the whole file.

/// The Go architecture (`amd64`, `arm64`, `ppc64le`, `s390x`) of a Linux ELF executable; `Err`
/// says why the bytes are not one.
pub fn architecture(header: &[u8]) -> Result<&'static str, String> {
    if header.len() < 20 || &header[..4] != b"\x7fELF" {
        return Err("not an ELF executable (no ELF header)".to_string());
    }
    let class64 = header[4] == 2;
    let little = match header[5] {
        1 => true,
        2 => false,
        other => return Err(format!("invalid ELF data encoding {other}")),
    };
    let half = |at: usize| {
        let b = [header[at], header[at + 1]];
        if little {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        }
    };
    let kind = half(16);
    if kind != 2 && kind != 3 {
        return Err(format!(
            "an ELF file of type {kind}, not an executable (2) or position-independent executable (3)"
        ));
    }
    let machine = half(18);
    match (machine, class64, little) {
        (62, true, true) => Ok("amd64"),
        (183, true, true) => Ok("arm64"),
        (21, true, true) => Ok("ppc64le"),
        (22, true, false) => Ok("s390x"),
        (3, false, true) => Ok("386"),
        (40, false, true) => Ok("arm"),
        _ => Err(format!(
            "an ELF executable for machine {machine} ({}-bit, {} endian), which no OpenShift platform runs",
            if class64 { 64 } else { 32 },
            if little { "little" } else { "big" }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(class: u8, data: u8, kind: u16, machine: u16) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = class;
        h[5] = data;
        let (k, m) = if data == 1 {
            (kind.to_le_bytes(), machine.to_le_bytes())
        } else {
            (kind.to_be_bytes(), machine.to_be_bytes())
        };
        h[16..18].copy_from_slice(&k);
        h[18..20].copy_from_slice(&m);
        h
    }

    #[test]
    fn architectures() {
        assert_eq!(architecture(&header(2, 1, 3, 62)), Ok("amd64"));
        assert_eq!(architecture(&header(2, 1, 2, 183)), Ok("arm64"));
        assert_eq!(architecture(&header(2, 1, 2, 21)), Ok("ppc64le"));
        assert_eq!(architecture(&header(2, 2, 2, 22)), Ok("s390x"));
        assert!(
            architecture(&header(2, 1, 1, 62))
                .unwrap_err()
                .contains("type 1")
        );
        assert!(
            architecture(&header(2, 1, 2, 99))
                .unwrap_err()
                .contains("machine 99")
        );
        assert!(
            architecture(b"#!/bin/sh\necho hi\n")
                .unwrap_err()
                .contains("not an ELF")
        );
        assert!(architecture(&header(2, 3, 2, 62)).is_err());
    }

    #[test]
    fn the_running_binary_is_for_the_running_architecture() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(
            architecture(&exe[..64]),
            Ok(crate::payload::metadata::running_architecture())
        );
    }
}
