// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/finding.h"

#include <QPointer>
#include <QWidget>

#include <cstdint>
#include <optional>
#include <vector>

class QLabel;
class QLineEdit;
class QTimer;
class QTreeView;

namespace ckpt {

class CheckpointDocument;
class OneLineBanner;
class SafetyBanner;
class TensorFilterProxyModel;
class TensorTreeModel;

// The left side of the main window: the safety banner, the debounced filter field, the tensor tree (drag
// source of the plan) and the colour legend of its devices, with the selections other parts ask for (one
// tensor from a details link, many from a finding, every tensor sharing a storage).
class TensorTreePanel : public QWidget {
    Q_OBJECT

public:
    explicit TensorTreePanel(QWidget* parent = nullptr);

    QTreeView* view() const { return m_view; }
    TensorFilterProxyModel* filterModel() const { return m_filterModel; }
    SafetyBanner* safetyBanner() const { return m_safetyBanner; } // the verdict, where a person looks first

    // Shows `model` over `document` (both null: nothing). The caller keeps both alive until the
    // next call.
    void setDocument(CheckpointDocument* document, TensorTreeModel* model);
    // After a new file: its first levels opened and the columns sized.
    void expandFirstLevels();
    void updateLegend(); // the devices of the target and of the file
    void focusFilter();
    // A triage's findings: badges on the rows a finding is about; findings about the whole file
    // (no tensor, or most of them) once, above the tree.
    void showFindings(const std::vector<Finding>& findings, std::size_t tensorCount);
    QString fileFindingsText() const; // what the line says (and its expansion when open); empty when hidden
    OneLineBanner* fileFindingsBanner() const { return m_fileFindings; }

    // The tree node of the current row, if any.
    std::optional<std::uint32_t> currentTreeNode() const;
    bool hasSelection() const;
    void selectTensor(std::uint32_t tensor);
    // Returns how many rows were selected (at most a few thousand: past that the tree is no help).
    std::size_t selectTensors(const std::vector<std::uint32_t>& tensors);
    // Adds every tensor viewing a storage of a selected one; returns how many tensors that is.
    std::size_t selectTensorsSharingStorage();

Q_SIGNALS:
    void currentChanged();
    void selectionChanged();

private:
    void showAllRows();

    QPointer<CheckpointDocument> m_document;
    QPointer<TensorTreeModel> m_model;
    SafetyBanner* m_safetyBanner = nullptr;
    QLineEdit* m_filterEdit = nullptr;
    QTimer* m_filterTimer = nullptr;
    QTreeView* m_view = nullptr;
    TensorFilterProxyModel* m_filterModel = nullptr;
    QLabel* m_legendLabel = nullptr;
    OneLineBanner* m_fileFindings = nullptr;
};

} // namespace ckpt
