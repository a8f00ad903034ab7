// The cinterrupts artifact's dump tool: RocksDB's own DbDumpTool (one
// iterator over the database, every pair appended to the dump file), the
// program RocksDB's tools/dump/rocksdb_dump builds, here without its
// command-line parsing. Used by rocksdb-dump-cpu.sh.
//
//   rocksdb_dump DB_PATH DUMP_FILE
#include <cstdio>

#include "rocksdb/db_dump_tool.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s DB_PATH DUMP_FILE\n", argv[0]);
    return 2;
  }
  rocksdb::DumpOptions dump;
  dump.db_path = argv[1];
  dump.dump_location = argv[2];
  return rocksdb::DbDumpTool().Run(dump) ? 0 : 1;
}
