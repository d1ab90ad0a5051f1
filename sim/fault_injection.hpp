#pragma once

/// @file
/// Fault injection for the simulated Sprint: the failures a parent must
/// survive (a child that crashes, hangs, answers garbage, never starts, never
/// answers `init`, speaks another protocol version, is slow), chosen on the
/// command line so that the parent's failure handling is testable against a
/// real process. This file decides *what* happens when; `sprint-sim` carries
/// it out on its pipes.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>

#include "protocol/byte_buffer.hpp"
#include "protocol/framing.hpp"
#include "protocol/messages.hpp"
#include "sim/sprint_sim_exit.hpp"

namespace sprintrt::sim {

/// The process-level fault of `--*.fault=NAME`.
enum class fault_kind : uint8_t {
  /// No fault.
  none,
  /// After answering `fault-after` loss/FSA requests, read the next one and
  /// exit with `sprint_sim_exit::crash` without replying.
  crash,
  /// After answering `fault-after` loss/FSA requests, read the next one and
  /// never reply (sleep until killed).
  hang,
  /// After answering `fault-after` loss/FSA requests, answer the next one
  /// with a framed message that is not a pickle, then keep serving.
  garbage,
  /// Exit with `sprint_sim_exit::exit_at_start` before reading anything.
  exit_at_start,
  /// Read `init`, never answer it (sleep until killed).
  no_init_reply,
  /// Answer `init` with protocol version 2 instead of 1, then keep serving.
  bad_version,
  /// After answering `fault-after` loss/FSA requests, begin the reply to the
  /// next one with a length prefix of 2 GiB - 1 (in raw framing: a pickle
  /// announcing 2^40 bytes), write 16 bytes of it and stop there (sleep
  /// until killed), as a child that runs out of memory mid-reply would.
  oversized_prefix,
  /// After answering `fault-after` loss/FSA requests, answer the next loss
  /// request with a well-formed reply whose error signal has one frame more
  /// than the request's posteriors, then keep serving (FSA requests are
  /// served normally).
  wrong_shape,
  /// Each loss/FSA request, with probability `fault-rate`, meets one of
  /// crash, hang, garbage, oversized-prefix, wrong-shape (loss requests
  /// only), bomb or a slow reply (1-50 ms), drawn from `fault-seed`; for
  /// soak tests.
  random,
  /// After answering `fault-after` loss/FSA requests, answer the next one
  /// with `append_memo_bomb` (half a MiB of message that a reader without a
  /// bound on what values hold would expand to 3 GB), then keep serving.
  bomb,
  /// After answering `fault-after` loss/FSA requests, answer the next loss
  /// request that came through the shared region with a reference past the
  /// region's end, then keep serving.
  shm_outside,
  /// Answer every loss request that came through the shared region, then
  /// keep writing NaN over its error signal for `shm_scribble_time` while the
  /// parent reads it (a child racing the parent's copy).
  shm_scribble,
  /// At the first loss request through the shared region, try to shrink
  /// the region to nothing and to seal it against growing (both refused by
  /// its seals), then serve normally.
  shm_shrink,
  /// Accept a shared region in the `init` reply without being offered one.
  shm_claim,
};

/// How long `shm-scribble` writes over an answered error signal.
constexpr std::chrono::milliseconds shm_scribble_time{200};

/// Returns the option spelling of `kind`: "none", "crash", "hang", "garbage",
/// "exit-at-start", "no-init-reply", "bad-version", "oversized-prefix",
/// "wrong-shape", "random", "bomb", "shm-outside", "shm-scribble",
/// "shm-shrink", "shm-claim".
const char* to_string(fault_kind kind) noexcept;

/// Parses the option spelling of a fault kind (see `to_string`).
std::optional<fault_kind> parse_fault_kind(std::string_view name) noexcept;

/// Returns whether `kind` fires after a number of answered requests, i.e.
/// whether `fault-after` applies to it (crash, hang, garbage,
/// oversized-prefix, wrong-shape, bomb, shm-outside).
bool counts_requests(fault_kind kind) noexcept;

/// The fault-injection options of `sprint-sim`.
struct fault_options {
  /// `--*.fault=NAME`.
  fault_kind kind = fault_kind::none;
  /// `--*.fault-after=N`: how many loss/FSA requests are answered normally
  /// before a counting fault fires.
  size_t after = 0;
  /// `--*.crash-segment=NAME`: crash whenever a loss/FSA request names this
  /// segment, regardless of `kind` and `after`.
  std::optional<std::string> crash_segment;
  /// `--*.delay-ms=N`: how long to wait before each reply to a loss/FSA
  /// request.
  std::chrono::milliseconds delay{0};
  /// `--*.init-delay-ms=N`: how long to wait before the `init` reply (a
  /// slow start, as a real Sprint loading its lexicon and model).
  std::chrono::milliseconds init_delay{0};
  /// `--*.fault-rate=P`: for `random`, the probability of a fault per
  /// loss/FSA request.
  double rate = 0.02;
  /// `--*.fault-seed=N`: for `random`, the seed of the draws (sprint-sim
  /// mixes in its pid, so that a restarted child draws anew).
  uint64_t seed = 1;
};

/// What to do with a request that was just read.
enum class fault_action : uint8_t {
  /// Answer it normally (after `reply_delay()` for loss/FSA requests).
  serve,
  /// Exit with `sprint_sim_exit::crash` without replying.
  crash,
  /// Never reply: sleep until killed.
  hang,
  /// Reply with `append_garbage_reply` instead of the real reply.
  garbage,
  /// Write `append_oversized_start` instead of the real reply, then never
  /// write again (sleep until killed).
  oversized_prefix,
  /// Answer a loss request with an error signal one frame too long.
  wrong_shape,
  /// Answer normally after `slow_delay()`.
  slow,
  /// Reply with `append_memo_bomb` instead of the real reply.
  bomb,
  /// Answer a loss request that came through the shared region with a
  /// reference past the region's end.
  shm_outside,
  /// Answer normally, then scribble over the answered error signal.
  shm_scribble,
};

/// Returns "serve", "crash", "hang", "garbage", "oversized-prefix",
/// "wrong-shape", "slow", "bomb", "shm-outside" or "shm-scribble".
const char* to_string(fault_action action) noexcept;

/// Decides, request by request, when the configured faults fire. Counts the
/// loss and FSA requests it lets through; `init`, `exit` and malformed
/// messages do not count.
class fault_injector {
public:
  /// An injector for `options`.
  explicit fault_injector(fault_options options)
      : options_(std::move(options)), rng_(options_.seed) {}

  /// Returns whether the process must exit before reading anything.
  bool exits_at_start() const noexcept { return options_.kind == fault_kind::exit_at_start; }

  /// Returns whether the process tries to shrink its shared region.
  bool shrinks_region() const noexcept { return options_.kind == fault_kind::shm_shrink; }

  /// Returns whether `init` is answered accepting a shared region, offered
  /// or not.
  bool claims_region() const noexcept { return options_.kind == fault_kind::shm_claim; }

  /// Returns the protocol version to answer `init` with: 2 for
  /// `bad-version`, else `protocol::protocol_version`.
  int64_t init_reply_version() const noexcept;

  /// Decides what to do with `request`, which was just read: `hang` for
  /// `init` under `no-init-reply`; for loss and FSA requests `crash` when
  /// they name the crash segment, the counting fault once `after` of them
  /// were served (`garbage` fires once, then serving resumes), else `serve`.
  fault_action on_request(const protocol::command& request) noexcept;

  /// Returns the delay before each reply to a loss/FSA request.
  std::chrono::milliseconds reply_delay() const noexcept { return options_.delay; }

  /// Returns the delay before the `init` reply.
  std::chrono::milliseconds init_delay() const noexcept { return options_.init_delay; }

  /// Returns the extra delay of the last `slow` action.
  std::chrono::milliseconds slow_delay() const noexcept { return slow_delay_; }

  /// Returns the number of loss/FSA requests served so far.
  size_t served() const noexcept { return served_; }

private:
  /// The draw of `random` for a loss (or FSA) request.
  fault_action draw(bool loss_request) noexcept;

  fault_options options_;
  std::mt19937_64 rng_;
  std::chrono::milliseconds slow_delay_{0};
  size_t served_ = 0;
  /// Whether the one-off reply fault (garbage, wrong-shape) has fired.
  bool garbage_sent_ = false;
};

/// Returns the segment a loss or FSA request names (an FSA by orthography:
/// the orthography), or nothing for other commands.
std::optional<std::string_view> requested_segment(const protocol::command& request) noexcept;

/// Appends a message framed like any other (a valid length prefix in
/// `length_prefixed` framing) whose body is not a pickle: its first byte is
/// no pickle opcode, so any unpickler fails on it at once.
void append_garbage_reply(protocol::byte_buffer& out, protocol::framing framing);

/// Appends the start of a reply that announces far more than any request
/// allows: in `length_prefixed` framing the prefix 2^31 - 1 and 12 bytes of
/// pickle, in `raw` framing PROTO 4 and a BINBYTES8 of 2^40 bytes; no more
/// follows.
void append_oversized_start(protocol::byte_buffer& out, protocol::framing framing);

/// The `bomb` fault's string size and number of copies: 512 KiB of message
/// for 3 GB of values, below the 1 MiB margin of any loss reply's limit, so
/// that the reader's bound and not the frame's stops it.
constexpr size_t bomb_text_size = size_t{512} << 10;
constexpr size_t bomb_calls = 6000;

/// Appends, framed, a protocol-2 pickle that memoizes one `text_size`-byte
/// string and encodes it with `_codecs.encode(text, 'latin1')` `calls` times
/// through the memo, returning the results as a tuple: about `text_size`
/// bytes of message whose values hold `calls` x `text_size` bytes (the 1 MB
/// pickle that asked a naive reader for 3 GB).
void append_memo_bomb(protocol::byte_buffer& out, protocol::framing framing, size_t text_size,
                      size_t calls);

} // namespace sprintrt::sim
