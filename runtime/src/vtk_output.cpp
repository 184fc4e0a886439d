// A node's state as VTK files: the default ImageData of Node::write_vtk, the FieldData every
// node's file carries, and writing a whole snapshot or simulation (one writer per file).
#include <uwjit/runtime/vtk.hpp>

#include "simulation_impl.hpp"

#include <uwjit/comm/verdict.hpp>
#include <uwjit/common/byte_io.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <system_error>

namespace uwjit::runtime {

std::vector<VtkFieldValue> vtk_field_data(const Node& node, const Snapshot& snapshot) {
  const std::int64_t step = snapshot.steps_taken();
  std::vector<VtkFieldValue> values = {
      {"step", step},
      {"time", static_cast<double>(step) * node.dt()},
      {"dt", node.dt()},
      {"node_type", node.type()},
      {"node_name", node.name()},
  };
  for (const auto& report : snapshot.kernel_reports()) {
    if (report.node == node.name()) {
      values.push_back({"kernel_key", report.info.key});
      break; // its first stage's
    }
  }
  for (const auto& [key, value] : node.params().values()) {
    const auto& v = value.variant();
    if (const auto* i = std::get_if<std::int64_t>(&v)) {
      values.push_back({"param_" + key, *i});
    } else if (const auto* d = std::get_if<double>(&v)) {
      values.push_back({"param_" + key, *d});
    } else if (const auto* text = std::get_if<std::string>(&v)) {
      values.push_back({"param_" + key, *text});
    } else {
      values.push_back({"param_" + key, value.text()});
    }
  }
  return values;
}

std::vector<std::filesystem::path> Node::write_vtk(const Snapshot& snapshot,
                                                   const std::filesystem::path& directory,
                                                   std::string_view stem) const {
  const NodeLayout shape = layout();
  ImageGeometry geometry;
  for (std::size_t d = 0; d < shape.axes.size() && d < 3; ++d) {
    geometry.cells[d] = shape.axes[d].cells;
  }
  std::vector<VtkArray> arrays;
  for (const auto& field : shape.fields) {
    arrays.push_back(
        image_cells(snapshot.field(name(), field.name), static_cast<int>(shape.axes.size())));
  }
  const auto path = directory / (std::string(stem) + ".vti");
  write_image_data(path, geometry, arrays, vtk_field_data(*this, snapshot));
  return {path};
}

std::vector<std::filesystem::path> Snapshot::write_vtk(const std::filesystem::path& directory,
                                                       std::string_view stem) const {
  std::error_code failed;
  std::filesystem::create_directories(directory, failed);
  if (failed || !std::filesystem::is_directory(directory)) {
    throw Error(ErrorKind::io,
                format("write_vtk: \"{}\" is not a directory that can be written in ({})",
                       directory.string(), failed ? failed.message() : "it is something else"));
  }
  std::vector<std::filesystem::path> written;
  try {
    for (const auto& node : nodes()) {
      const std::string name = stem.empty() ? node->name() : format("{}_{}", stem, node->name());
      const auto paths = node->write_vtk(*this, directory, name);
      written.insert(written.end(), paths.begin(), paths.end());
    }
  } catch (const std::system_error& error) {
    throw Error(ErrorKind::io,
                format("write_vtk: writing in \"{}\": {}", directory.string(), error.what()));
  }
  return written;
}

std::vector<std::filesystem::path> Simulation::write_vtk(const std::filesystem::path& directory,
                                                         std::string_view stem) const {
  const Snapshot whole = gathered(); // collective when sharded
  if (!m_impl->decomposition || m_impl->decomposition->comm->size() == 1) {
    return whole.write_vtk(directory, stem);
  }
  // One writer per file: rank 0 writes them all; its outcome is every rank's (the same error on
  // every rank), and so is the list of what it wrote.
  comm::Comm& comm = *m_impl->decomposition->comm;
  std::vector<std::filesystem::path> written;
  comm::together(comm, [&] {
    if (comm.rank() == 0) {
      written = whole.write_vtk(directory, stem);
    }
  });
  ByteWriter out;
  out.u32(static_cast<std::uint32_t>(written.size()));
  for (const auto& path : written) {
    out.str(path.string());
  }
  const std::string bytes = comm.broadcast(std::move(out.bytes()), 0);
  ByteReader in(bytes, "write_vtk: the paths rank 0 wrote");
  const std::uint32_t count = in.u32();
  std::vector<std::filesystem::path> paths;
  for (std::uint32_t i = 0; i < count; ++i) {
    paths.emplace_back(in.str());
  }
  return paths;
}

} // namespace uwjit::runtime
