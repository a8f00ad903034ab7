# Sourced by the RocksDB evidence scripts: db_bench's options of
# docs/APPS.md's reference runs, as one list. 16 B keys and 1 KiB values,
# no compression, 4 KiB blocks, no Bloom filters, an 8 MiB block cache,
# two 64 MiB memtables and 64 MiB table files, direct I/O for flush and
# compaction with 2 MiB compaction read-ahead, one flush and one
# compaction thread, one benchmark thread. A later flag on the same
# command line overrides one of these (gflags keeps the last).
rocksdb_reference=(
  --key_size=16 --value_size=1024 --compression_type=none
  --block_size=4096 --bloom_bits=-1 --cache_size=8388608
  --write_buffer_size=67108864 --max_write_buffer_number=2
  --target_file_size_base=67108864 --max_bytes_for_level_base=268435456
  --use_direct_io_for_flush_and_compaction=true --compaction_readahead_size=2097152
  --max_background_jobs=2 --threads=1
)
