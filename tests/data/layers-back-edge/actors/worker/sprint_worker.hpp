#pragma once

// A worker header that includes the pool above it: check_layers must fail.
#include "actors/pool/worker_pool.hpp"
