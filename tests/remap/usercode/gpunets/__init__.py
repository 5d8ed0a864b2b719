# SPDX-License-Identifier: MIT
"""A user's own package: the classes of a model saved whole with torch.save(model) (tests/remap)."""
