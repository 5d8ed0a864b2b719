// SPDX-License-Identifier: MIT
#include "ui/base/appsettings.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>

namespace ckpt {

namespace {

// Keys, in one place.
constexpr const char* kWindowGeometry = "window/geometry";
constexpr const char* kWindowState = "window/state";
constexpr const char* kSplitterPrefix = "window/splitters/";
constexpr const char* kRecentFiles = "files/recent";
constexpr const char* kLastTargetProfile = "plan/lastTargetProfile";
constexpr const char* kTheme = "view/theme";
constexpr const char* kFirstRunHintDismissed = "view/firstRunHintDismissed";
constexpr const char* kDetailsShown = "view/detailsShown";

QString normalisedPath(const QString& path)
{
    return QDir::cleanPath(QFileInfo(path).absoluteFilePath());
}

} // namespace

AppSettings::AppSettings()
    : m_settings(std::make_unique<QSettings>())
{ }

AppSettings::~AppSettings() = default;

QVariant AppSettings::value(const char* key, const QVariant& defaultValue) const
{
    return m_settings->value(QLatin1String(key), defaultValue);
}

void AppSettings::setValue(const char* key, const QVariant& value)
{
    m_settings->setValue(QLatin1String(key), value);
}

QByteArray AppSettings::windowGeometry() const
{
    return value(kWindowGeometry, QByteArray()).toByteArray();
}

void AppSettings::setWindowGeometry(const QByteArray& geometry)
{
    setValue(kWindowGeometry, geometry);
}

QByteArray AppSettings::windowState() const
{
    return value(kWindowState, QByteArray()).toByteArray();
}

void AppSettings::setWindowState(const QByteArray& state)
{
    setValue(kWindowState, state);
}

QByteArray AppSettings::splitterState(const QString& splitterName) const
{
    return m_settings->value(QLatin1String(kSplitterPrefix) + splitterName, QByteArray()).toByteArray();
}

void AppSettings::setSplitterState(const QString& splitterName, const QByteArray& state)
{
    m_settings->setValue(QLatin1String(kSplitterPrefix) + splitterName, state);
}

QStringList AppSettings::recentFiles() const
{
    // Cleaned on read too: the file may have been edited by hand or written by an older version.
    QStringList result;
    const QStringList stored = value(kRecentFiles, QStringList()).toStringList();
    for (const QString& path : stored) {
        if (path.isEmpty())
            continue;
        const QString normalised = normalisedPath(path);
        if (!result.contains(normalised))
            result.append(normalised);
        if (result.size() == kMaxRecentFiles)
            break;
    }
    return result;
}

void AppSettings::addRecentFile(const QString& path)
{
    QStringList files = recentFiles();
    const QString normalised = normalisedPath(path);
    files.removeAll(normalised);
    files.prepend(normalised);
    while (files.size() > kMaxRecentFiles)
        files.removeLast();
    setValue(kRecentFiles, files);
}

void AppSettings::removeRecentFile(const QString& path)
{
    QStringList files = recentFiles();
    files.removeAll(normalisedPath(path));
    setValue(kRecentFiles, files);
}

void AppSettings::clearRecentFiles()
{
    setValue(kRecentFiles, QStringList());
}

QString AppSettings::lastTargetProfile() const
{
    return value(kLastTargetProfile, QString()).toString();
}

void AppSettings::setLastTargetProfile(const QString& name)
{
    setValue(kLastTargetProfile, name);
}

QString AppSettings::theme() const
{
    return value(kTheme, QStringLiteral("system")).toString();
}

void AppSettings::setTheme(const QString& theme)
{
    setValue(kTheme, theme);
}

bool AppSettings::firstRunHintDismissed() const
{
    return value(kFirstRunHintDismissed, false).toBool();
}

void AppSettings::setFirstRunHintDismissed(bool dismissed)
{
    setValue(kFirstRunHintDismissed, dismissed);
}

bool AppSettings::detailsShown() const
{
    return value(kDetailsShown, true).toBool();
}

void AppSettings::setDetailsShown(bool shown)
{
    setValue(kDetailsShown, shown);
}

} // namespace ckpt
