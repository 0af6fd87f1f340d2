#pragma once
// An HDF5 handle closed on scope exit with the close function of its kind (H5Fclose, H5Dclose,
// H5Sclose, ...): for the dataset file (dataset_h5.cpp) and the trajectory file
// (rollout/trajectory_file.cpp). Header-only; includers link HDF5 themselves.
#include <hdf5.h>

namespace kforge {

struct H5Handle {
  hid_t id;
  herr_t (*close)(hid_t);
  H5Handle(hid_t i, herr_t (*c)(hid_t)) : id(i), close(c) {}
  ~H5Handle() {
    if (id >= 0) close(id);
  }
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
};

}  // namespace kforge
