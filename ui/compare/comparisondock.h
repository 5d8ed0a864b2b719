// SPDX-License-Identifier: MIT
#pragma once

#include <QDockWidget>
#include <QPointer>

#include <cstdint>

class QComboBox;
class QLabel;
class QModelIndex;
class QPushButton;
class QTreeView;

namespace ckpt {

class CheckpointDocument;
class ComparisonFilterModel;
class ComparisonModel;
class DocumentController;
class JobProgressDialog;
class JobTracker;
struct Comparison;

// File > Compare With…: the open checkpoint against another file or folder, in a dock. The
// comparison runs as a job (progress, cancel; a new one or another open document makes it stale)
// and shows tensors added, removed, renamed, and changed in dtype, shape, stride, recorded device
// or value, with the largest value differences of float tensors; filtered by kind, sortable by
// any column. Clicking a row asks for its tensor to be selected in the main tree.
class ComparisonDock : public QDockWidget {
    Q_OBJECT

public:
    ComparisonDock(DocumentController* documents, QWidget* parent);
    ~ComparisonDock() override;

    // Asks for a file (or, from the dock's button, a folder) and compares with it.
    void chooseFileAndCompare();
    void chooseFolderAndCompare();
    // Compares the open checkpoint with `path` off the GUI thread; comparisonFinished() follows.
    void compareWith(const QString& path);
    bool isComparing() const;

    ComparisonModel* model() const { return m_model; }
    ComparisonFilterModel* filterModel() const { return m_filter; }
    QTreeView* view() const { return m_view; }
    QComboBox* kindFilter() const { return m_kindFilter; }
    QString summaryText() const;

Q_SIGNALS:
    void tensorActivated(std::uint32_t tensor); // an index into the open checkpoint's tensors
    void comparisonFinished(bool ok, const QString& summary);

private:
    void documentChanged(CheckpointDocument* current);
    void showComparison(std::shared_ptr<const Comparison> comparison);
    void activate(const QModelIndex& proxyIndex);
    void updateButtons();

    DocumentController* m_documents = nullptr;
    JobTracker* m_jobs = nullptr;
    QPointer<JobProgressDialog> m_progressDialog;
    ComparisonModel* m_model = nullptr;
    ComparisonFilterModel* m_filter = nullptr;
    QLabel* m_summary = nullptr;
    QLabel* m_note = nullptr;
    QComboBox* m_kindFilter = nullptr;
    QPushButton* m_fileButton = nullptr;
    QPushButton* m_folderButton = nullptr;
    QTreeView* m_view = nullptr;
};

} // namespace ckpt
