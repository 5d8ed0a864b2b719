// SPDX-License-Identifier: MIT
#include "ui/widgets/loadsimulationbar.h"

#include "core/model/checkpoint.h"
#include "core/plan/placementplan.h"
#include "ui/document/checkpointdocument.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QTextDocument>
#include <QTimer>
#include <QVBoxLayout>

#include <set>

namespace ckpt {

namespace {

QString fromStd(const std::string& text)
{
    return QString::fromStdString(text);
}

// "torch 2.6+ loads it (tensors on cpu)" or "torch 2.6+ fails: RuntimeError …", as HTML.
QString outcomeHtml(const LoadSimulation& simulation)
{
    const QString name = QString::fromLatin1(torchGenerationName(simulation.generation));
    if (simulation.loads) {
        const QStringList names = landingDevicesHtml(simulation);
        QString text
            = LoadSimulationBar::tr("<b>%1</b> <span style=\"color:#2e7d32\">loads it</span>").arg(name);
        if (!names.isEmpty())
            text += LoadSimulationBar::tr(" (tensors on %1)").arg(names.join(QStringLiteral(", ")));
        return text;
    }
    QString error = firstLineOf(simulation.error);
    if (error.size() > 100)
        error = error.left(99) + QChar(0x2026);
    return LoadSimulationBar::tr("<b>%1</b> <span style=\"color:#c62828\">fails</span>: “%2”")
        .arg(name, error.toHtmlEscaped());
}

QString bothHtml(const Checkpoint& checkpoint, const std::vector<std::optional<std::string>>* devices,
    const MachineInventory& target, const MapLocation& mapLocation)
{
    const LoadSimulation modern
        = simulateLoadWithDevices(checkpoint, devices, target, mapLocation, TorchGeneration::Torch26Plus);
    const LoadSimulation old
        = simulateLoadWithDevices(checkpoint, devices, target, mapLocation, TorchGeneration::Torch113);
    // One line each: the same outcome from both generations is said once.
    if (modern.loads == old.loads && modern.error == old.error)
        return outcomeHtml(modern)
            .replace(QStringLiteral("torch 2.6+</b>"), QStringLiteral("torch 2.6+ and 1.13</b>"))
            .replace(QStringLiteral("loads it</span>"), QStringLiteral("load it</span>"))
            .replace(QStringLiteral(">fails</span>"), QStringLiteral(">fail</span>"));
    return outcomeHtml(modern) + QStringLiteral(" · ") + outcomeHtml(old);
}

} // namespace

QStringList landingDevicesHtml(const LoadSimulation& simulation)
{
    std::set<std::string> devices;
    for (const StorageLoadOutcome& outcome : simulation.storages)
        if (outcome.landsOn)
            devices.insert(*outcome.landsOn);
    QStringList names;
    for (const std::string& device : devices)
        names.append(fromStd(device).toHtmlEscaped());
    return names;
}

QString firstLineOf(const std::string& text)
{
    const QString all = fromStd(text);
    const qsizetype newline = all.indexOf(QLatin1Char('\n'));
    return newline < 0 ? all : all.left(newline);
}

LoadSimulationBar::LoadSimulationBar(QWidget* parent)
    : QWidget(parent)
    , m_refreshTimer(new QTimer(this))
{
    setObjectName(QStringLiteral("loadSimulationBar"));
    setAccessibleName(tr("Load simulation"));

    m_mapLocationBox = new QComboBox(this);
    m_mapLocationBox->setObjectName(QStringLiteral("mapLocationBox"));
    m_mapLocationBox->setEditable(true);
    m_mapLocationBox->setInsertPolicy(QComboBox::NoInsert);
    m_mapLocationBox->addItems({QStringLiteral("None"), QStringLiteral("'cpu'"), QStringLiteral("'cuda:0'")});
    m_mapLocationBox->setMinimumContentsLength(14);
    m_mapLocationBox->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_mapLocationBox->setToolTip(tr("The map_location given to torch.load: None, a device ('cpu'), or a "
                                    "dict {'cuda:1': 'cuda:0'}. Type your own."));
    m_mapLocationBox->setAccessibleName(tr("map_location"));

    m_targetBox = new QComboBox(this);
    m_targetBox->setObjectName(QStringLiteral("simulationTargetBox"));
    m_targetBox->setToolTip(tr("The machine torch.load runs on (the plan's target)"));
    m_targetBox->setAccessibleName(tr("Target machine"));
    m_targetBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);

    m_result = new QLabel(this);
    m_result->setObjectName(QStringLiteral("loadSimulationResult"));
    m_result->setTextFormat(Qt::RichText);
    m_result->setWordWrap(true);
    m_result->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* choices = new QHBoxLayout;
    choices->setContentsMargins(0, 0, 0, 0);
    auto* mapLabel = new QLabel(tr("torch.load(…, map_location="), this);
    mapLabel->setBuddy(m_mapLocationBox);
    choices->addWidget(mapLabel);
    choices->addWidget(m_mapLocationBox);
    auto* onLabel = new QLabel(tr(") on"), this);
    onLabel->setBuddy(m_targetBox);
    choices->addWidget(onLabel);
    choices->addWidget(m_targetBox);
    choices->addStretch(1);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 2, 4, 2);
    layout->setSpacing(2);
    layout->addLayout(choices);
    layout->addWidget(m_result);

    m_refreshTimer->setSingleShot(true);
    m_refreshTimer->setInterval(0);
    connect(m_refreshTimer, &QTimer::timeout, this, &LoadSimulationBar::refresh);
    connect(m_mapLocationBox, &QComboBox::currentTextChanged, this, [this] {
        readMapLocation();
        forgetFileAsItIs();
        scheduleRefresh();
    });
    connect(m_targetBox, &QComboBox::activated, this,
        [this](int index) { Q_EMIT targetChosen(m_targetBox->itemText(index)); });
    refresh();
}

void LoadSimulationBar::setDocument(CheckpointDocument* document)
{
    if (m_document)
        disconnect(m_document, nullptr, this, nullptr);
    m_document = document;
    if (document) {
        connect(document, &CheckpointDocument::placementChanged, this, &LoadSimulationBar::scheduleRefresh);
        connect(document, &CheckpointDocument::targetChanged, this, [this] {
            forgetFileAsItIs();
            scheduleRefresh();
        });
    }
    forgetFileAsItIs();
    refresh();
}

void LoadSimulationBar::setTargetChoices(const QStringList& choices, const QString& current)
{
    const QSignalBlocker blocker(m_targetBox);
    if (choices != [this] {
            QStringList items;
            for (int i = 0; i < m_targetBox->count(); ++i)
                items.append(m_targetBox->itemText(i));
            return items;
        }()) {
        m_targetBox->clear();
        m_targetBox->addItems(choices);
    }
    const int index = m_targetBox->findText(current);
    if (index >= 0) {
        m_targetBox->setCurrentIndex(index);
    } else {
        // A described machine that is not among the choices: shown, not offered again.
        m_targetBox->addItem(current);
        m_targetBox->setCurrentIndex(m_targetBox->count() - 1);
    }
}

void LoadSimulationBar::setMapLocationText(const QString& text)
{
    m_mapLocationBox->setCurrentText(text);
    readMapLocation();
    forgetFileAsItIs();
    refresh();
}

void LoadSimulationBar::readMapLocation()
{
    auto parsed = MapLocation::parse(m_mapLocationBox->currentText().toStdString());
    if (parsed) {
        m_mapLocation = std::move(parsed.value());
        m_mapLocationError.clear();
    } else {
        m_mapLocationError = fromStd(parsed.error().message);
    }
}

void LoadSimulationBar::forgetFileAsItIs()
{
    m_asItIsHtml.clear();
}

void LoadSimulationBar::scheduleRefresh()
{
    m_refreshTimer->start();
}

void LoadSimulationBar::refresh()
{
    m_refreshTimer->stop();
    if (!m_document) {
        m_result->setText(tr("<span style=\"color:gray\">Open a checkpoint to ask what torch.load would do "
                             "with it.</span>"));
        Q_EMIT refreshed();
        return;
    }
    if (!m_mapLocationError.isEmpty()) {
        m_result->setText(QStringLiteral("<span style=\"color:#c62828\">%1</span>")
                              .arg(m_mapLocationError.toHtmlEscaped()));
        Q_EMIT refreshed();
        return;
    }
    const Checkpoint& checkpoint = m_document->checkpoint();
    const PlacementPlan& plan = m_document->plan();
    const MachineInventory& target = m_document->target();
    // The choosers above say which map_location and target: the lines say only what happens.
    if (m_asItIsHtml.isEmpty())
        m_asItIsHtml = bothHtml(checkpoint, nullptr, target, m_mapLocation);
    QString html = tr("<b>The file as it is:</b> %1").arg(m_asItIsHtml);
    if (plan.changesAnything()) {
        std::vector<std::optional<std::string>> planned(checkpoint.storages.size());
        for (std::uint32_t storage = 0; storage < planned.size(); ++storage)
            planned[storage] = plan.plannedDeviceOfStorage(storage);
        html += QStringLiteral("<br>")
            + tr("<b>After this plan</b> (the saved copy): %1")
                  .arg(bothHtml(checkpoint, &planned, target, m_mapLocation));
        if (const auto mapping = plan.asTagMapping()) {
            MapLocation same;
            same.kind = MapLocation::Kind::Dict;
            same.dict = *mapping;
            html += QStringLiteral("<br>")
                + tr("The same at load time, without a copy: <code>torch.load(path, map_location=%1)</code>")
                      .arg(fromStd(same.python()).toHtmlEscaped());
        }
    } else {
        html += QStringLiteral("<br><span style=\"color:gray\">%1</span>")
                    .arg(tr(
                        "The plan changes nothing yet: drag tensors onto a device, or use the Plan menu."));
    }
    m_result->setText(html);
    Q_EMIT refreshed();
}

QString LoadSimulationBar::resultText() const
{
    QTextDocument document;
    document.setHtml(m_result->text());
    return document.toPlainText();
}

} // namespace ckpt
