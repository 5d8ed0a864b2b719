// SPDX-License-Identifier: MIT
#pragma once

#include "core/triage/triage.h"

#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

class QLabel;
class QModelIndex;
class QSortFilterProxyModel;
class QTextBrowser;
class QTreeView;

namespace ckpt {

class FindingsModel;
class LoadSimulationBar;
struct Checkpoint;

// The Findings panel: a summary line (is it safe to load with weights_only, would torch 1.13 and
// 2.6+ load it on the target) over a sortable table of the triage's findings and the explanation
// and fix of the current one. Clicking a finding asks for its tensors to be selected in the tree.
class FindingsPanel : public QWidget {
    Q_OBJECT

public:
    explicit FindingsPanel(QWidget* parent = nullptr);
    ~FindingsPanel() override;

    // Shows a finished triage of `checkpoint` (which names the tensors) run against `targetName`.
    void setReport(
        const TriageReport& report, std::shared_ptr<const Checkpoint> checkpoint, const QString& targetName);
    // While a triage runs: the old findings stay greyed out under a "Checking…" summary.
    void setChecking(bool checking);
    void clear();

    bool hasReport() const { return m_hasReport; }
    // Makes current the first finding (in the shown order) about any of `tensors`, without
    // selecting its tensors in the tree; false when no finding is about them.
    bool showFindingAbout(const std::vector<std::uint32_t>& tensors);
    SafetyRating weightsOnlyRating() const { return m_rating; }
    QString summaryText() const; // the summary as plain text (tests, accessibility)

    FindingsModel* model() const { return m_model; }
    QSortFilterProxyModel* proxyModel() const { return m_proxy; }
    QTreeView* view() const { return m_view; }
    // map_location and target choosers over what torch.load would do, as the file is and after the plan.
    LoadSimulationBar* simulationBar() const { return m_simulationBar; }

Q_SIGNALS:
    // The tensors (indices into Checkpoint::tensors) a clicked or activated finding concerns.
    void tensorsActivated(std::vector<std::uint32_t> tensors);

private:
    void showCurrent(const QModelIndex& proxyIndex);
    void activate(const QModelIndex& proxyIndex);

    FindingsModel* m_model = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    LoadSimulationBar* m_simulationBar = nullptr;
    QLabel* m_summary = nullptr;
    QTreeView* m_view = nullptr;
    QTextBrowser* m_details = nullptr;
    bool m_hasReport = false;
    SafetyRating m_rating = SafetyRating::NotApplicable;
    QString m_summaryHtml;
};

} // namespace ckpt
