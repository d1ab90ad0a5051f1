// A stand-in child that writes one length-prefixed message to descriptor 3
// and exits at once, without waiting for anything: the race between its
// last bytes and its exit status is what the channel must get right.
// The message is a pickle of one bytes object of N bytes, N from an argument
// --*.burst-bytes=N (default 1000). With --*.burst-garbage=1 a broken frame
// (a negative length) follows in the same write. Other misbehaviours:
// --*.raw-burst=N writes N tiny pickles back to back (raw framing) in one
// write; --*.stdout-flood=N writes N bytes to stdout first;
// --*.close-reply-pipe=1 closes descriptor 3 and then waits to be killed;
// --*.then-wait=1 waits to be killed after writing the message.

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

/// The number after `key` in `arg`, if `arg` holds it.
bool number_after(const std::string& arg, const std::string& key, size_t& value) {
  auto pos = arg.find(key);
  if (pos == std::string::npos)
    return false;
  value = std::strtoull(arg.c_str() + pos + key.size(), nullptr, 10);
  return true;
}

/// Writes all of `bytes` to `fd`; false on failure.
bool write_all(int fd, const std::vector<unsigned char>& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w <= 0)
      return false;
    done += static_cast<size_t>(w);
  }
  return true;
}

} // namespace

int main(int argc, char** argv) {
  size_t n = 1000;
  bool garbage = false;
  size_t raw_burst = 0;
  size_t flood = 0;
  size_t close_reply = 0;
  size_t then_wait = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    number_after(arg, "burst-bytes=", n);
    number_after(arg, "raw-burst=", raw_burst);
    number_after(arg, "stdout-flood=", flood);
    number_after(arg, "close-reply-pipe=", close_reply);
    number_after(arg, "then-wait=", then_wait);
    garbage = garbage || arg.find("burst-garbage=1") != std::string::npos;
  }
  if (flood > 0 && !write_all(1, std::vector<unsigned char>(flood, 'o')))
    return 1;
  if (close_reply > 0) {
    ::close(3);
    for (;;)
      ::pause();
  }
  if (raw_burst > 0) {
    std::vector<unsigned char> burst;
    for (size_t k = 0; k < raw_burst; ++k)
      burst.insert(burst.end(), {0x80, 2, 'N', '.'}); // PROTO 2, NONE, STOP
    return write_all(3, burst) ? 0 : 1;
  }
  // PROTO 3, BINBYTES n <n bytes>, TUPLE1, STOP
  std::vector<unsigned char> pickle{0x80, 3, 'B'};
  for (int k = 0; k < 4; ++k)
    pickle.push_back(static_cast<unsigned char>((n >> (8 * k)) & 0xff));
  pickle.insert(pickle.end(), n, 'x');
  pickle.push_back(0x85);
  pickle.push_back('.');
  std::vector<unsigned char> frame;
  uint32_t size = static_cast<uint32_t>(pickle.size());
  for (int k = 0; k < 4; ++k)
    frame.push_back(static_cast<unsigned char>((size >> (8 * k)) & 0xff));
  frame.insert(frame.end(), pickle.begin(), pickle.end());
  if (garbage)
    frame.insert(frame.end(), {0xff, 0xff, 0xff, 0xff});
  if (!write_all(3, frame))
    return 1;
  while (then_wait > 0)
    ::pause();
  _exit(0);
}
