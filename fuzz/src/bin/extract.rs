fn main() {
    afl::fuzz!(|data: &[u8]| cvo_fuzz::fuzz_extract(data));
}
