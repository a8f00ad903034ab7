//! virtio-blk's request format (virtio 1.x, 5.2.6) and config space, as
//! the driver writes and reads them.

/// Request type: read from the disk.
pub const T_IN: u32 = virtio_bindings::virtio_blk::VIRTIO_BLK_T_IN;
/// Request type: write to the disk.
pub const T_OUT: u32 = virtio_bindings::virtio_blk::VIRTIO_BLK_T_OUT;
/// Request type: flush the write cache.
pub const T_FLUSH: u32 = virtio_bindings::virtio_blk::VIRTIO_BLK_T_FLUSH;
/// Request type: the device id string.
pub const T_GET_ID: u32 = virtio_bindings::virtio_blk::VIRTIO_BLK_T_GET_ID;
/// Status: success.
pub const S_OK: u8 = virtio_bindings::virtio_blk::VIRTIO_BLK_S_OK as u8;
/// Status: the request failed.
pub const S_IOERR: u8 = virtio_bindings::virtio_blk::VIRTIO_BLK_S_IOERR as u8;
/// Status: the request type is not supported.
pub const S_UNSUPP: u8 = virtio_bindings::virtio_blk::VIRTIO_BLK_S_UNSUPP as u8;
/// A status byte value no device writes, put there before submitting so an
/// untouched status is visible.
pub const S_UNTOUCHED: u8 = 0xa5;
/// Size of the request header (type, ioprio, sector).
pub const HEADER_LEN: u32 = 16;
/// virtio-blk sectors are always 512 bytes, whatever the block size.
pub const SECTOR: u64 = 512;

/// Feature bit: `seg_max` is valid.
pub const F_SEG_MAX: u32 = virtio_bindings::virtio_blk::VIRTIO_BLK_F_SEG_MAX;
/// Feature bit: `blk_size` is valid.
pub const F_BLK_SIZE: u32 = virtio_bindings::virtio_blk::VIRTIO_BLK_F_BLK_SIZE;
/// Feature bit: the disk is read-only.
pub const F_RO: u32 = virtio_bindings::virtio_blk::VIRTIO_BLK_F_RO;
/// Feature bit: FLUSH is supported.
pub const F_FLUSH: u32 = virtio_bindings::virtio_blk::VIRTIO_BLK_F_FLUSH;
/// Feature bit: more than one queue.
pub const F_MQ: u32 = virtio_bindings::virtio_blk::VIRTIO_BLK_F_MQ;

/// Encodes a request header.
pub fn header(req_type: u32, ioprio: u32, sector: u64) -> [u8; HEADER_LEN as usize] {
    let mut h = [0u8; HEADER_LEN as usize];
    h[0..4].copy_from_slice(&req_type.to_le_bytes());
    h[4..8].copy_from_slice(&ioprio.to_le_bytes());
    h[8..16].copy_from_slice(&sector.to_le_bytes());
    h
}

/// The fields of the config space the harness uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlkConfig {
    /// Size in 512-byte sectors.
    pub capacity: u64,
    /// `num_queues` (valid with `F_MQ`).
    pub num_queues: u16,
}

/// Bytes of config space read: up to and including `num_queues`.
pub const CONFIG_LEN: u32 = 36;

impl BlkConfig {
    /// Decodes the first `CONFIG_LEN` bytes of the config space.
    pub fn parse(raw: &[u8]) -> Option<Self> {
        let capacity = u64::from_le_bytes(raw.get(0..8)?.try_into().ok()?);
        let num_queues = u16::from_le_bytes(raw.get(34..36)?.try_into().ok()?);
        Some(Self {
            capacity,
            num_queues,
        })
    }
}
