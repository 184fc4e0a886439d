// A node's state as VTK files: the default ImageData of Node::vtk_image and write_vtk, the
// FieldData every node's file carries, and writing a snapshot or a simulation: serially one file
// per node; sharded, each rank the piece of its slab and rank 0 the index (.pvti).
#include <uwjit/runtime/vtk.hpp>

#include "simulation_impl.hpp"

#include <uwjit/comm/verdict.hpp>
#include <uwjit/common/byte_io.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <optional>
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

std::optional<VtkImage> Node::vtk_image(const Snapshot& snapshot) const {
  const NodeLayout shape = layout();
  const Slab& slab = snapshot.slab(name());
  VtkImage image;
  for (std::size_t d = 0; d < slab.extent.size() && d < 3; ++d) {
    image.geometry.cells[d] = slab.extent[d];
    image.geometry.first[d] = slab.offset[d];
  }
  for (const auto& field : shape.fields) {
    image.cells.push_back(
        image_cells(snapshot.field(name(), field.name), static_cast<int>(shape.axes.size())));
  }
  image.field_data = vtk_field_data(*this, snapshot);
  return image;
}

std::vector<std::filesystem::path> Node::write_vtk(const Snapshot& snapshot,
                                                   const std::filesystem::path& directory,
                                                   std::string_view stem) const {
  const auto image = vtk_image(snapshot);
  if (!image) {
    throw Error(ErrorKind::usage,
                format("write_vtk: node \"{}\" of type \"{}\" has no ImageData form and does "
                       "not write VTK files of its own (Node::write_vtk)",
                       name(), type()));
  }
  const auto path = directory / (std::string(stem) + ".vti");
  write_image_data(path, *image);
  return {path};
}

namespace {

// Creates `directory` (and its parents) unless it is one; Error(io) naming it otherwise.
void make_directory(const std::filesystem::path& directory) {
  std::error_code failed;
  std::filesystem::create_directories(directory, failed);
  if (failed || !std::filesystem::is_directory(directory)) {
    throw Error(ErrorKind::io,
                format("write_vtk: \"{}\" is not a directory that can be written in ({})",
                       directory.string(), failed ? failed.message() : "it is something else"));
  }
}

// `write` with the file system's exceptions as Error(io) naming `directory`.
template <class Write> auto writing_in(const std::filesystem::path& directory, Write&& write) {
  try {
    return write();
  } catch (const std::system_error& error) {
    throw Error(ErrorKind::io,
                format("write_vtk: writing in \"{}\": {}", directory.string(), error.what()));
  }
}

// Error(usage) unless `stem` is empty or a plain file name, so that the files it names stay in
// their directory ("../x", "/abs" or a newline in a name would not).
void check_stem(std::string_view stem) {
  if (!stem.empty() && !is_safe_name(stem)) {
    throw Error(ErrorKind::usage,
                format("write_vtk: stem \"{}\" is not a plain file name (1 to 64 ASCII letters, "
                       "digits, '_', '-' and '.', the first a letter, a digit or '_')",
                       printable(stem)));
  }
}

// The name of rank `rank`'s piece of an image written as `stem`: STEM_RANK, RANK in at least 4
// digits, so that a directory listing sorts them.
std::string piece_name(std::string_view stem, int rank) {
  std::string digits = std::to_string(rank);
  if (digits.size() < 4) {
    digits.insert(0, 4 - digits.size(), '0');
  }
  return format("{}_{}.vti", stem, digits);
}

// The paths rank 0 has in `written`, on every rank.
std::vector<std::filesystem::path>
paths_of_rank_0(comm::Comm& comm, const std::vector<std::filesystem::path>& written) {
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

} // namespace

std::vector<std::filesystem::path> Snapshot::write_vtk(const std::filesystem::path& directory,
                                                       std::string_view stem) const {
  check_stem(stem);
  make_directory(directory);
  std::vector<std::filesystem::path> written;
  writing_in(directory, [&] {
    for (const auto& node : nodes()) {
      const std::string name = stem.empty() ? node->name() : format("{}_{}", stem, node->name());
      const auto paths = node->write_vtk(*this, directory, name);
      written.insert(written.end(), paths.begin(), paths.end());
    }
  });
  return written;
}

std::vector<std::filesystem::path> Simulation::write_vtk(const std::filesystem::path& directory,
                                                         std::string_view stem) const {
  if (!m_impl->decomposition || m_impl->decomposition->comm->size() == 1) {
    return gathered().write_vtk(directory, stem); // which checks the stem
  }
  check_stem(stem);
  std::vector<std::filesystem::path> written;
  for (const auto& node : m_impl->nodes) {
    const std::string name = stem.empty() ? node->name() : format("{}_{}", stem, node->name());
    const auto paths = write_node_vtk(node->name(), directory, name);
    written.insert(written.end(), paths.begin(), paths.end());
  }
  return written;
}

std::vector<std::filesystem::path>
Simulation::write_node_vtk(std::string_view node_name, const std::filesystem::path& directory,
                           std::string_view stem) const {
  const Node& node = this->node(node_name);
  if (!m_impl->decomposition || m_impl->decomposition->comm->size() == 1) {
    make_directory(directory);
    const Snapshot whole = gathered();
    return writing_in(directory, [&] { return node.write_vtk(whole, directory, stem); });
  }
  comm::Comm& comm = *m_impl->decomposition->comm;
  const Snapshot mine = m_impl->slab_snapshot(node.name()); // this node's slab alone
  std::optional<VtkImage> image;
  comm::together(comm, [&] { image = node.vtk_image(mine); });
  std::uint64_t imaged = image ? 1 : 0;
  comm.all_reduce_sum(std::span<std::uint64_t>(&imaged, 1));
  if (imaged != static_cast<std::uint64_t>(comm.size())) {
    // No image (a mesh, say): the whole state gathered, one writer per file.
    image.reset();
    const Snapshot whole = gathered();
    std::vector<std::filesystem::path> written;
    comm::together(comm, [&] {
      if (comm.rank() == 0) {
        make_directory(directory);
        written = writing_in(directory, [&] { return node.write_vtk(whole, directory, stem); });
      }
    });
    return paths_of_rank_0(comm, written);
  }
  // In pieces: each rank writes the image of its own slab; then rank 0 the index of the pieces.
  const std::filesystem::path pieces = directory / std::string(stem);
  comm::together(comm, [&] {
    make_directory(pieces); // by every rank: one whose directory is another's is told below
    writing_in(directory,
               [&] { write_image_data(pieces / piece_name(stem, comm.rank()), *image); });
  });
  ByteWriter box;
  for (std::size_t a = 0; a < 3; ++a) {
    box.i64(image->geometry.first[a]);
    box.i64(image->geometry.cells[a]);
  }
  const auto boxes = comm.all_gather(box.bytes()); // 48 bytes per rank, for the index
  const auto path = directory / (std::string(stem) + ".pvti");
  comm::together(comm, [&] {
    if (comm.rank() != 0) {
      return;
    }
    std::vector<VtkPiece> list;
    for (std::size_t r = 0; r < boxes.size(); ++r) {
      ByteReader in(boxes[r], "write_vtk: a piece's cells");
      VtkPiece piece{std::filesystem::path(std::string(stem)) /
                     piece_name(stem, static_cast<int>(r))};
      std::error_code failed;
      if (!std::filesystem::is_regular_file(directory / piece.file, failed)) {
        throw Error(ErrorKind::io,
                    format("write_vtk: rank {} wrote its piece \"{}\", which rank 0 does not see "
                           "there (do the ranks share the directory \"{}\"?)",
                           r, (directory / piece.file).string(), directory.string()));
      }
      for (std::size_t a = 0; a < 3; ++a) {
        piece.first[a] = in.i64();
        piece.cells[a] = in.i64();
      }
      list.push_back(std::move(piece));
    }
    ImageGeometry whole = image->geometry;
    whole.first = {0, 0, 0};
    const Slab& slab = mine.slab(node.name());
    for (std::size_t a = 0; a < slab.global.size() && a < 3; ++a) {
      whole.cells[a] = slab.global[a];
    }
    writing_in(directory, [&] { write_parallel_image_data(path, whole, image->cells, list); });
  });
  return {path};
}

} // namespace uwjit::runtime
