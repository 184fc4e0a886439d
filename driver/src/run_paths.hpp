// The paths of a run, checked before any work: where the output goes, where the checkpoint goes,
// what is restored, and that none of them is another's file. Each throws Error(io)
// "COMMAND: OPTION PATH: why" (without "COMMAND: " for a program that is its own command).
#pragma once

#include <filesystem>
#include <string_view>

namespace uwjit::driver {

/// Creates `directory` if it is missing and proves that a file can be created in it.
void check_output(std::string_view command, const std::filesystem::path& directory);

/// The checkpoint's directory can be written in, and `file` is nothing yet, a symlink, an empty
/// file or an earlier checkpoint (a regular file starting with `magic`, the first bytes of a
/// `kind`): never a directory, device, FIFO or socket, nor a user's other file.
void check_checkpoint(std::string_view command, const std::filesystem::path& file,
                      std::string_view magic, std::string_view kind);

/// The run's VTK files in `output` for node `node` (NODE.vti, NODE.pvti, NODE.vtu, NODE.pvd) are
/// nothing yet, empty or earlier VTK files, by the VTK writer's rule: a user's file named like
/// one is refused before the first step, not when the run ends.
void check_vtk_outputs(std::string_view command, const std::filesystem::path& output,
                       std::string_view node);

/// `file` is a regular file that can be read (a FIFO is refused, never waited on).
void check_restore(std::string_view command, const std::filesystem::path& file);

/// The checkpoint is not one of the files the run writes in `output` for node `node`: NODE.vti,
/// NODE.pvti, NODE.vtu, NODE.pvd and NODE_*.{vti,pvti,vtu,png} (the series and the pictures),
/// nor a sharded run's piece (NODE_*.vti in NODE/ or NODE_*/ there). Directories are compared
/// by identity, so that another spelling of the same directory is found.
void check_checkpoint_apart(std::string_view command, const std::filesystem::path& checkpoint,
                            const std::filesystem::path& output, std::string_view node);

} // namespace uwjit::driver
