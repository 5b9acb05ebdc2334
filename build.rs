// The bundled payload is embedded with `include_dir!`, which cannot tell cargo about the files it
// reads; rebuild whenever they change.
fn main() {
    println!("cargo:rerun-if-changed=payloads");
}
