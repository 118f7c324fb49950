fn main() {
    let s = std::fs::read_to_string(std::env::args().nth(1).unwrap()).unwrap();
    for ev in saphyr_parser::Parser::new_from_str(&s) {
        println!("{:?}", ev.map(|(e, _)| e));
    }
}
