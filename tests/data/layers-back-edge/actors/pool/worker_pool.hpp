#pragma once

#include "actors/worker/sprint_worker.hpp"
