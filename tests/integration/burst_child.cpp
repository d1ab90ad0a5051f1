// A stand-in child that writes one length-prefixed message to descriptor 3
// and exits at once, without waiting for anything: the race between its
// last bytes and its exit status is what the channel must get right.
// The message is a pickle of one bytes object of N bytes, N from an argument
// --*.burst-bytes=N (default 1000). With --*.burst-garbage=1 a broken frame
// (a negative length) follows in the same write.

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  size_t n = 1000;
  bool garbage = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto pos = arg.find("burst-bytes=");
    if (pos != std::string::npos)
      n = std::strtoull(arg.c_str() + pos + 12, nullptr, 10);
    garbage = garbage || arg.find("burst-garbage=1") != std::string::npos;
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
  size_t done = 0;
  while (done < frame.size()) {
    ssize_t w = ::write(3, frame.data() + done, frame.size() - done);
    if (w <= 0)
      return 1;
    done += static_cast<size_t>(w);
  }
  _exit(0);
}
