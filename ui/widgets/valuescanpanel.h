// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/finding.h"

#include <QPointer>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

class QLabel;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;
class QTimer;

namespace ckpt {

class CheckpointDocument;
class JobTracker;
class NonFiniteTableModel;
class TensorValuesSource;
class ValuesChartWidget;

// "Scan values": the values of every tensor of the open checkpoint (every shard of a folder) in a
// job with progress and Cancel, through the ckpt-inspect-values helper (the GUI never loads
// libtorch). Lists the tensors holding NaN or ±Inf, most first, sortable by any count; clicking
// one shows the histogram of its finite values beside the list and selects it in the tree.
class ValueScanPanel : public QWidget {
    Q_OBJECT

public:
    explicit ValueScanPanel(QWidget* parent = nullptr);

    void setValuesSource(std::shared_ptr<TensorValuesSource> source);
    bool hasValuesSource() const { return m_source != nullptr; }
    // A new document drops the results of the previous one (and stops its scan).
    void setDocument(CheckpointDocument* document);
    void startScan();
    void cancelScan();
    bool isScanning() const;

    QTableView* table() const { return m_table; }
    NonFiniteTableModel* model() const { return m_model; }
    ValuesChartWidget* chart() const { return m_chart; }
    QString statusText() const;
    // The scan's findings ("values-nonfinite", one per listed tensor, as `check --values` gives
    // them); the current row's is shown under the list.
    const std::vector<Finding>& findings() const { return m_findings; }
    QString findingText() const;

Q_SIGNALS:
    void tensorActivated(std::uint32_t tensor);
    void scanFinished();

private:
    void showSelected();
    void updateProgress();

    QPointer<CheckpointDocument> m_document;
    std::shared_ptr<TensorValuesSource> m_source;
    JobTracker* m_jobs = nullptr;
    QTimer* m_progressTimer = nullptr;
    QLabel* m_status = nullptr;
    QProgressBar* m_progress = nullptr;
    QPushButton* m_cancel = nullptr;
    QPushButton* m_rescan = nullptr;
    NonFiniteTableModel* m_model = nullptr;
    QSortFilterProxyModel* m_sorted = nullptr;
    QTableView* m_table = nullptr;
    QLabel* m_finding = nullptr;
    std::vector<Finding> m_findings;
    QLabel* m_chartTitle = nullptr;
    ValuesChartWidget* m_chart = nullptr;
};

} // namespace ckpt
