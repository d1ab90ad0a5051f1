#pragma once

/// @file
/// What travels between a trainer, a pool and its workers, one header per
/// concept: `matrix_slice`, `segment_job`, `segment_fsa`, `fsa_query` and
/// `worker_stats`. Include the one you need; this header includes them all.

#include "sprintrt/fsa_query.hpp"
#include "sprintrt/matrix_slice.hpp"
#include "sprintrt/segment_fsa.hpp"
#include "sprintrt/segment_job.hpp"
#include "sprintrt/worker_stats.hpp"
