//! Arrow-free, dependency-free kernels: FastLanes bit-packing and FSST.

pub mod bitpack;
pub mod fsst;
