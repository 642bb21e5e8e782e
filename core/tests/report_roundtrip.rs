//! Every randomizer's report decodes to the header it wrote and a payload in range.

use privq_core::local::{
    BinaryRr, Grr, HadamardResponse, LocalRandomizer, Olh, OneBitMean, QueryId, SqBit, SqLaplace,
    UeVariant, UnaryEncoding, UnitValue,
};
use privq_core::report::{Payload, decode};
use privq_core::{Epsilon, Error, Fixed};
use rand_chacha::ChaCha12Rng;
use rand_core::SeedableRng;

fn roundtrip<M: LocalRandomizer>(m: &M, input: &M::Input, expected_len: usize) -> Vec<u8> {
    let mut rng = ChaCha12Rng::seed_from_u64(11);
    let mut buf = [0u8; 300];
    let n = m
        .privatize_into(input, QueryId(0xBEEF), &mut rng, &mut buf)
        .unwrap();
    assert_eq!(n, expected_len);
    assert_eq!(n, m.report_len());
    let r = decode(&buf[..n]).unwrap();
    assert_eq!(r.header, m.header(QueryId(0xBEEF)));
    // Too-small buffers are refused before anything is written.
    let mut small = vec![0u8; n - 1];
    assert_eq!(
        m.privatize_into(input, QueryId(0), &mut rng, &mut small),
        Err(Error::BufferTooSmall)
    );
    assert!(small.iter().all(|&b| b == 0));
    buf[..n].to_vec()
}

#[test]
fn every_mechanism_round_trips_with_documented_length() {
    let eps = Epsilon::new(1, 1).unwrap();
    roundtrip(&BinaryRr::new(eps).unwrap(), &true, 13);
    roundtrip(&Grr::new(eps, 10).unwrap(), &9, 13);
    roundtrip(&Grr::new(eps, 1000).unwrap(), &999, 14);
    roundtrip(&Grr::new(eps, 100_000).unwrap(), &0, 16);
    let oue = roundtrip(
        &UnaryEncoding::new(UeVariant::Optimized, eps, 64).unwrap(),
        &5,
        20,
    );
    assert!(matches!(decode(&oue).unwrap().payload, Payload::Bits(b) if b.len() == 8));
    roundtrip(
        &UnaryEncoding::new(UeVariant::Symmetric, eps, 1024).unwrap(),
        &5,
        140,
    );
    roundtrip(
        &UnaryEncoding::new(UeVariant::Optimized, eps, 13).unwrap(),
        &12,
        14,
    );
    roundtrip(&Olh::new(eps, 1024).unwrap(), &3, 23);
    roundtrip(&HadamardResponse::new(eps, 1024).unwrap(), &1023, 14);
    roundtrip(&HadamardResponse::new(eps, 255).unwrap(), &0, 13);
    roundtrip(&OneBitMean::new(eps, 40).unwrap(), &Fixed::from_int(40), 13);
    roundtrip(&SqBit::new(eps).unwrap(), &UnitValue::ONE, 13);
    let lap = roundtrip(&SqLaplace::new(eps).unwrap(), &UnitValue::ONE, 20);
    assert!(
        matches!(decode(&lap).unwrap().payload, Payload::Value(v) if v.to_bits() % (1 << 22) == 0)
    );
}

#[test]
fn epsilon_must_fit_the_header() {
    assert_eq!(
        BinaryRr::new(Epsilon::new(1, 70_000).unwrap()),
        Err(Error::NotEncodable)
    );
    assert!(BinaryRr::new(Epsilon::new(1, 65_535).unwrap()).is_ok());
}

#[test]
fn same_seed_same_bytes() {
    let eps = Epsilon::new(1, 2).unwrap();
    let oue = UnaryEncoding::new(UeVariant::Optimized, eps, 64).unwrap();
    let a = roundtrip(&oue, &7, 20);
    let b = roundtrip(&oue, &7, 20);
    assert_eq!(a, b);
}
