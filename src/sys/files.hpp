#pragma once
// The real file system behind core's FileAccess seam (core/files.hpp).

#include "core/files.hpp"

namespace tandem::sys {

FileAccess real_files();

} // namespace tandem::sys
