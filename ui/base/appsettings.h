// SPDX-License-Identifier: MIT
#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <QVariant>

#include <memory>

class QSettings;

namespace ckpt {

// The app's settings, typed: every key and its default are declared once, in appsettings.cpp.
// Backed by QSettings (organisation and application names set in main()).
class AppSettings {
public:
    AppSettings();
    ~AppSettings();

    static constexpr int kMaxRecentFiles = 10;

    QByteArray windowGeometry() const;
    void setWindowGeometry(const QByteArray& geometry);
    QByteArray windowState() const;
    void setWindowState(const QByteArray& state);
    // Splitters by object name ("mainSplitter", "sideSplitter").
    QByteArray splitterState(const QString& splitterName) const;
    void setSplitterState(const QString& splitterName, const QByteArray& state);

    // Most recent first, absolute paths, no duplicates, at most kMaxRecentFiles.
    QStringList recentFiles() const;
    void addRecentFile(const QString& path);
    void removeRecentFile(const QString& path);
    void clearRecentFiles();

    // A saved target profile's name; empty means this machine, as detected.
    QString lastTargetProfile() const;
    void setLastTargetProfile(const QString& name);

    // "system" (the platform's palette), "light" or "dark".
    QString theme() const;
    void setTheme(const QString& theme);
    // The first-run hint over the device cards, once closed, stays closed.
    bool firstRunHintDismissed() const;
    void setFirstRunHintDismissed(bool dismissed);
    // The Details dock, once closed, stays closed (until shown again from the View menu).
    bool detailsShown() const;
    void setDetailsShown(bool shown);

private:
    QVariant value(const char* key, const QVariant& defaultValue) const;
    void setValue(const char* key, const QVariant& value);

    std::unique_ptr<QSettings> m_settings;
};

} // namespace ckpt
