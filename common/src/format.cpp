// format()'s stream, one per thread, made once: what a format() call spends is its text.
#include <uwjit/common/format.hpp>

#include <locale>
#include <string>

namespace uwjit::detail {

namespace {

// True once this thread's stream is destroyed (at the thread's exit): a format() from a later
// destructor makes a stream of its own. A plain bool has no destructor, so it outlives the slot.
thread_local bool t_stream_gone = false;

struct StreamSlot {
  std::ostringstream stream;
  bool busy = false;
  StreamSlot() { stream.imbue(std::locale::classic()); }
  StreamSlot(const StreamSlot&) = delete;
  StreamSlot& operator=(const StreamSlot&) = delete;
  ~StreamSlot() { t_stream_gone = true; }
};

StreamSlot& slot() {
  thread_local StreamSlot s;
  return s;
}

} // namespace

std::ostringstream* borrow_format_stream() {
  if (t_stream_gone) {
    return nullptr;
  }
  StreamSlot& s = slot();
  if (s.busy) {
    return nullptr;
  }
  s.busy = true;
  return &s.stream;
}

void return_format_stream(std::ostringstream* stream) noexcept {
  // A moved-in empty string frees the buffer, so that no thread keeps its longest text.
  stream->str(std::string());
  stream->clear();
  stream->flags(std::ios_base::skipws | std::ios_base::dec);
  stream->precision(6);
  stream->width(0);
  stream->fill(' ');
  slot().busy = false;
}

} // namespace uwjit::detail
