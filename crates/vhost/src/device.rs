//! What the device offers the driver: virtio feature bits and the
//! virtio-blk configuration space.

use vhost::vhost_user::message::VhostUserVirtioFeatures;
use virtio_bindings::virtio_blk::{
    VIRTIO_BLK_F_BLK_SIZE, VIRTIO_BLK_F_DISCARD, VIRTIO_BLK_F_FLUSH, VIRTIO_BLK_F_MQ,
    VIRTIO_BLK_F_RO, VIRTIO_BLK_F_SEG_MAX, VIRTIO_BLK_F_WRITE_ZEROES,
};
use virtio_bindings::virtio_config::VIRTIO_F_VERSION_1;
use virtio_bindings::virtio_ring::{VIRTIO_RING_F_EVENT_IDX, VIRTIO_RING_F_INDIRECT_DESC};

use crate::image::{Image, ImageKind};
use crate::options::SECTOR;
use crate::request::Limits;

/// Largest discard or write-zeroes range, in sectors (4 GiB - 512).
pub const MAX_RANGE_SECTORS: u32 = u32::MAX / SECTOR as u32;
/// Size of the configuration space we expose (up to and including
/// `write_zeroes_may_unmap` and its padding).
pub const CONFIG_LEN: usize = 60;

/// The device's fixed description.
#[derive(Clone, Debug)]
pub struct Device {
    /// Feature bits offered.
    pub features: u64,
    /// The configuration space.
    pub config: [u8; CONFIG_LEN],
    /// What requests may ask.
    pub limits: Limits,
}

impl Device {
    /// Describes a disk on `image` with `queues` queues of `queue_size`.
    pub fn new(image: &Image, queues: u16, queue_size: u16, read_only: bool) -> Device {
        // fallocate on a block device needs a recent kernel; offer discard
        // and write-zeroes where they are sure to work.
        let ranges = !read_only
            && match &image.kind {
                ImageKind::Null => true,
                ImageKind::File(f) => !f.is_block_device,
            };
        let seg_max = u32::from(queue_size) - 2;
        let limits = Limits {
            sectors: image.sectors(),
            read_only,
            seg_max,
            discard: ranges,
            write_zeroes: ranges,
        };
        let mut features = 1u64 << VIRTIO_F_VERSION_1
            | 1 << VIRTIO_RING_F_EVENT_IDX
            | 1 << VIRTIO_RING_F_INDIRECT_DESC
            | 1 << VIRTIO_BLK_F_SEG_MAX
            | 1 << VIRTIO_BLK_F_BLK_SIZE
            | 1 << VIRTIO_BLK_F_FLUSH
            | 1 << VIRTIO_BLK_F_MQ
            | VhostUserVirtioFeatures::PROTOCOL_FEATURES.bits();
        if read_only {
            features |= 1 << VIRTIO_BLK_F_RO;
        }
        if ranges {
            features |= 1 << VIRTIO_BLK_F_DISCARD | 1 << VIRTIO_BLK_F_WRITE_ZEROES;
        }

        let mut c = [0u8; CONFIG_LEN];
        let mut put = |at: usize, bytes: &[u8]| c[at..at + bytes.len()].copy_from_slice(bytes);
        put(0, &image.sectors().to_le_bytes()); // capacity
        put(12, &seg_max.to_le_bytes()); // seg_max
        put(20, &(SECTOR as u32).to_le_bytes()); // blk_size
        put(34, &queues.to_le_bytes()); // num_queues
        if ranges {
            put(36, &MAX_RANGE_SECTORS.to_le_bytes()); // max_discard_sectors
            put(40, &1u32.to_le_bytes()); // max_discard_seg
            put(44, &1u32.to_le_bytes()); // discard_sector_alignment
            put(48, &MAX_RANGE_SECTORS.to_le_bytes()); // max_write_zeroes_sectors
            put(52, &1u32.to_le_bytes()); // max_write_zeroes_seg
            put(56, &[1]); // write_zeroes_may_unmap
        }
        Device {
            features,
            config: c,
            limits,
        }
    }

    /// `size` bytes of the configuration space from `offset`; bytes past
    /// its end read as zero.
    pub fn config_bytes(&self, offset: u32, size: u32) -> Vec<u8> {
        let mut out = vec![0u8; size as usize];
        let start = (offset as usize).min(CONFIG_LEN);
        let end = (offset as usize)
            .saturating_add(size as usize)
            .min(CONFIG_LEN);
        out[..end - start].copy_from_slice(&self.config[start..end]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::ImageSpec;

    #[test]
    fn config_space_has_capacity_seg_max_blk_size_and_queues() {
        let image = Image::open(&ImageSpec::Null(1 << 20), false).unwrap();
        let d = Device::new(&image, 4, 128, false);
        let c = d.config_bytes(0, CONFIG_LEN as u32);
        assert_eq!(u64::from_le_bytes(c[0..8].try_into().unwrap()), 2048);
        assert_eq!(u32::from_le_bytes(c[12..16].try_into().unwrap()), 126);
        assert_eq!(u32::from_le_bytes(c[20..24].try_into().unwrap()), 512);
        assert_eq!(u16::from_le_bytes(c[34..36].try_into().unwrap()), 4);
        assert_eq!(d.config_bytes(34, 2), vec![4, 0]);
        assert_eq!(d.config_bytes(200, 4), vec![0; 4]);
        assert_ne!(d.features & (1 << VIRTIO_BLK_F_DISCARD), 0);
        let ro = Device::new(&image, 1, 128, true);
        assert_ne!(ro.features & (1 << VIRTIO_BLK_F_RO), 0);
        assert_eq!(ro.features & (1 << VIRTIO_BLK_F_DISCARD), 0);
    }
}
