// Every results file fracsim writes (stats.json, layers.csv, the trace, .fbin/.fasm, sweep
// files, the op reference) goes through one writer: the bytes go to a temporary file in the
// target's folder, are flushed to disk, and the temporary is renamed over the target. A reader
// never sees a half-written file, and a failed write leaves neither a temporary nor a partial
// file behind (a file already at the path stays as it was).
#pragma once

#include <string>
#include <string_view>

namespace fracsim::cli {

// ConfigError "PATH: cannot write file (REASON)" when the folder is missing or unwritable,
// the disk is full or PATH is a folder.
void write_file_atomically(const std::string& path, std::string_view contents);

// Throws what write_file_atomically(PATH, ...) would for an unwritable PATH (a missing or
// unwritable folder, PATH a folder), writing nothing: a long run checks its outputs before it
// starts, not after.
void check_writable(const std::string& path);

// The folder PATH and its parents, made where missing; ConfigError "PATH: cannot create
// directory (REASON)" when one cannot be (a file in the way, no permission).
void make_directories(const std::string& path);

// Throws what make_directories(PATH) and then write_file_atomically(PATH/FILE, ...) would for a
// folder that cannot be made or written, making nothing: its nearest existing ancestor must be
// a folder that takes a new entry.
void check_directory_writable(const std::string& path);

}  // namespace fracsim::cli
