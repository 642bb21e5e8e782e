//! The budget ledger's flash: privq-core's fail-closed, wear-levelled
//! [`FlashStore`](privq_core::flash_store::FlashStore) (feature `flash-ledger`) on a
//! simulated NOR flash.
//!
//! The layout, the provisioning rule (erased flash after the first boot never reads as a
//! new device), the wear levelling and the power-cut behaviour are the crate's
//! (`privq_core::flash_store`); this module only fixes the firmware's simulated flash.
//! [`SimFlash`] is RAM (not persistent across a QEMU run; tests simulate a reboot by opening
//! a new store on the same flash) with 128-byte pages, so the firmware's 512 bytes are the
//! flag page and three log pages of two slots: the five epochs of a QEMU run wrap the ring.
//! A board passes its HAL's `embedded_storage::nor_flash::NorFlash` and a region of whole
//! pages instead: `FlashStore::in_region(nvmc, 0x3_F000..0x4_0000)`.

pub use privq_core::flash_store::{FlashStore, RamFlash, RamFlashError, StoreError};

/// The page size of [`SimFlash`] (bytes).
pub const SIM_PAGE: usize = 128;

/// `N` bytes of simulated NOR flash with [`SIM_PAGE`]-byte pages and 4-byte words.
pub type SimFlash<const N: usize> = RamFlash<N, SIM_PAGE, 4>;

/// The store under the name the on-target and end-to-end tests use.
pub type FlashLedgerStore<F> = FlashStore<F>;
