// uwjit.KernelWriter: the writer a node writes its kernel with, made in Python or lent to a
// node's emit for one call, and the Source it finishes (with its buffer declarations).
#pragma once

#include "kernel.hpp"

#include <uwjit/codegen/kernel_writer.hpp>
#include <uwjit/common/error.hpp>

#include <memory>
#include <string>
#include <utility>

namespace uwjit::python {

// uwjit.KernelWriter: one made in Python (owned), or one a node's emit is lent (valid while the
// emit runs). Every method goes through get(), so that a writer kept after its emit refuses
// every use instead of reaching memory that is gone.
class PyKernelWriter {
public:
  explicit PyKernelWriter(std::string origin)
      : m_owned(std::make_unique<codegen::KernelWriter>(std::move(origin))),
        m_writer(m_owned.get()) {}
  PyKernelWriter(codegen::KernelWriter& lent, std::string lender)
      : m_writer(&lent), m_lender(std::move(lender)) {}

  codegen::KernelWriter& get() const {
    if (m_writer == nullptr) {
      throw Error(ErrorKind::usage, "this KernelWriter belonged to " + m_lender +
                                        ", which has ended (keep what it wrote, not the writer)");
    }
    return *m_writer;
  }
  void end() noexcept { m_writer = nullptr; }

private:
  std::unique_ptr<codegen::KernelWriter> m_owned;
  codegen::KernelWriter* m_writer;
  std::string m_lender;
};

// A writer lent to Python for one call of a node's emit (made and ended with the GIL held).
class LentWriter {
public:
  LentWriter(codegen::KernelWriter& writer, std::string lender)
      : m_object(py::cast(PyKernelWriter(writer, std::move(lender)))) {}
  ~LentWriter() { m_object.cast<PyKernelWriter&>().end(); }
  LentWriter(const LentWriter&) = delete;
  LentWriter& operator=(const LentWriter&) = delete;
  [[nodiscard]] const py::object& object() const noexcept { return m_object; }

private:
  py::object m_object;
};

/// "compiled" or "runtime"; ValueError naming the accepted ones otherwise.
[[nodiscard]] codegen::ExtentMode extent_arg(const std::string& text);
/// "Extent(id=N)".
[[nodiscard]] std::string extent_repr(const codegen::Extent& extent);
/// `source` as a uwjit.Source with the buffer declarations of the writer that wrote it, so that a
/// Kernel made from it checks its calls' arrays against them.
[[nodiscard]] PySource declared_source(const codegen::KernelWriter& writer,
                                       codegen::KernelSource source);
/// Binds uwjit.Extent, uwjit.Axis and uwjit.KernelWriter.
void bind_kernel_writer(py::module_& m);

} // namespace uwjit::python
