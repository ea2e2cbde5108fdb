// Candidates compiled for an arch and never run (`tune --compile-only`; schema 8), as `db pack`
// keeps them and `db explain` shows them: ranked by the analytical model, since nothing measured
// them. None of them is ever a winner.
#pragma once
#include <string>
#include <vector>

#include "db/database.h"
#include "gpu/backend.h"
#include "solutions/model.h"

namespace tiletune::db {

struct RankedCompiled {
  CompiledRecord record;
  ModelEstimate estimate;  // on the device assumed for the arch
};

// The device the candidates of `arch` were compiled for: the database's device row of that arch
// (a compile-only sweep writes one), else the arch table's figures (device_for_arch).
gpu::DeviceInfo compiled_device(Database& db, const std::string& arch);

// Candidates of one problem, in the model's order on `dev` (first: the one it expects fastest).
// Those whose template this build lacks or that break a constraint on `dev` are left out, each
// with its reason in `skipped` when given.
std::vector<RankedCompiled> rank_compiled(const std::vector<CompiledRecord>& candidates, const gpu::DeviceInfo& dev,
                                          std::vector<std::string>* skipped = nullptr);

}  // namespace tiletune::db
