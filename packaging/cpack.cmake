# SPDX-License-Identifier: MIT
# The Debian packages (cpack -G DEB, or packaging/build-deb.sh): ckpt-inspector (both programs,
# the demo, desktop integration, man pages) and ckpt-inspector-values (the libtorch helper), from
# the `main` and `values` install components of data/CMakeLists.txt. Their library dependencies
# come from dpkg-shlibdeps, so they name the Debian release the binaries were built on.
set(CKPT_PACKAGE_MAINTAINER "Checkpoint Inspector authors <ckpt-inspector@users.noreply.github.com>"
  CACHE STRING "Maintainer field of the Debian packages")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ckpt-inspector)
set(CPACK_PACKAGE_VENDOR "The Checkpoint Inspector authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPack would put it above each package's own synopsis (the
# first line of its description below), and the two packages have different ones.
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
# Directories the package creates are 0755 whatever the builder's umask.
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
  OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL main)
if(TARGET ckpt-inspect-values)
  list(APPEND CPACK_COMPONENTS_ALL values)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CKPT_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SOURCE ckpt-inspector)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SECTION science)

set(CPACK_DEBIAN_MAIN_PACKAGE_NAME ckpt-inspector)
set(CPACK_DEBIAN_MAIN_PACKAGE_SECTION science)
# Suggests, not Recommends: apt installs recommendations by default, and the helper's libtorch
# would multiply the install many times over for one optional pane.
set(CPACK_DEBIAN_MAIN_PACKAGE_SUGGESTS ckpt-inspector-values)
# Opened at run time, not linked (core/io/optionallibraries.h), so dpkg-shlibdeps cannot see them;
# what it finds is added to these.
set(CPACK_DEBIAN_MAIN_PACKAGE_DEPENDS "libarchive13, libcurl4")
set(CPACK_DEBIAN_MAIN_DESCRIPTION "inspect PyTorch checkpoints without running their pickle code
Checkpoint Inspector opens PyTorch checkpoints (torch.save files, safetensors,
folders of shards) without running any of their pickle code and shows every
tensor with its dtype, shape, size and the device its storage was recorded on.
It explains why torch.load fails on this machine, rates every pickle as inert,
needing an allowlist or dangerous, and writes a copy whose tensors load where
planned with plain torch.load.
.
This package holds the desktop app (ckpt-inspector), the command line
(ckpt-inspect) and a small demo checkpoint for teaching. Value statistics
(NaN counts, ranges, histograms) need the ckpt-inspector-values package.")

set(CPACK_DEBIAN_VALUES_PACKAGE_NAME ckpt-inspector-values)
set(CPACK_DEBIAN_VALUES_PACKAGE_SECTION science)
set(CPACK_DEBIAN_VALUES_PACKAGE_DEPENDS "ckpt-inspector (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_VALUES_DESCRIPTION "tensor value statistics for Checkpoint Inspector (libtorch)
The ckpt-inspect-values helper computes each tensor's NaN, infinite and zero
counts, range, mean, standard deviation and histogram, and value differences
between two checkpoints, for ckpt-inspect (check --values, diff) and the
values pane of the desktop app. It links libtorch; the checkpoint itself is
read without running any pickle code.")

include(CPack)
