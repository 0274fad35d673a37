//! xSTEBZ's arguments: RANGE and ORDER decoded, LAPACK's checks in LAPACK's order, and the
//! [`Job`] the stages read.

use crate::real::Real;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Range {
    All,
    Value,
    Index,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    ByBlock,
    Entire,
}

pub(super) fn decode_range(c: u8) -> Option<Range> {
    match c.to_ascii_uppercase() {
        b'A' => Some(Range::All),
        b'V' => Some(Range::Value),
        b'I' => Some(Range::Index),
        _ => None,
    }
}

pub(super) fn decode_order(c: u8) -> Option<Order> {
    match c.to_ascii_uppercase() {
        b'B' => Some(Order::ByBlock),
        b'E' => Some(Order::Entire),
        _ => None,
    }
}

/// xSTEBZ's argument checks, in LAPACK's order: 0, or −i when the i-th argument (1 RANGE,
/// 2 ORDER, 3 N, 5 VU, 6 IL, 7 IU) is illegal. RANGE and ORDER are case-insensitive.
pub fn check_args<T: Real>(range: u8, order: u8, n: i32, vl: T, vu: T, il: i32, iu: i32) -> i32 {
    let Some(range) = decode_range(range) else {
        return -1;
    };
    if decode_order(order).is_none() {
        return -2;
    }
    if n < 0 {
        return -3;
    }
    match range {
        Range::Value if vl >= vu => -5,
        Range::Index if il < 1 || il > n.max(1) => -6,
        Range::Index if iu < n.min(il) || iu > n => -7,
        _ => 0,
    }
}

/// The decoded arguments of one call with N ≥ 2.
pub(super) struct Job<'a, T> {
    pub(super) range: Range,
    pub(super) order: Order,
    pub(super) vl: T,
    pub(super) vu: T,
    pub(super) il: i32,
    pub(super) iu: i32,
    pub(super) abstol: T,
    pub(super) d: &'a [T],
    pub(super) e: &'a [T],
}
