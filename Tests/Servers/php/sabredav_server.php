<?php
// sabre/dav 1.8 (Debian's php-sabre-dav) as a CardDAV + CalDAV server on its PDO SQLite backends,
// the layout of the package's examples/groupwareserver.php, for
//
//   FERRY_SABREDAV_DB=/tmp/.../sabredav.sqlite php -S 127.0.0.1:PORT sabredav_server.php
//
// started by dav_servers.py --server sabredav. Every request goes through this script (the
// built-in server's router). Tree: /principals/USER/, /calendars/USER/CAL/, /addressbooks/USER/BOOK/.
// Authentication is HTTP Basic, checked against the digesta1 column (md5("user:SabreDAV:password"))
// of the package's users table, so the shipped schema and Digest-style rows serve Basic clients.

date_default_timezone_set('UTC');
// sabre/dav 1.8 predates PHP 8; its deprecation notices must not end up in response bodies.
error_reporting(E_ALL & ~E_DEPRECATED & ~E_NOTICE & ~E_WARNING);
ini_set('display_errors', '0');
ini_set('log_errors', '1');

require_once 'Sabre/autoload.php';

class FerryBasicAuth extends \Sabre\DAV\Auth\Backend\AbstractBasic {
    private $pdo;
    private $realm;

    function __construct(\PDO $pdo, $realm) {
        $this->pdo = $pdo;
        $this->realm = $realm;
    }

    protected function validateUserPass($username, $password) {
        $stmt = $this->pdo->prepare('SELECT digesta1 FROM users WHERE username = ?');
        $stmt->execute(array($username));
        $hash = $stmt->fetchColumn();
        return $hash !== false && hash_equals($hash, md5($username . ':' . $this->realm . ':' . $password));
    }
}

$pdo = new \PDO('sqlite:' . getenv('FERRY_SABREDAV_DB'));
$pdo->setAttribute(\PDO::ATTR_ERRMODE, \PDO::ERRMODE_EXCEPTION);
$pdo->exec('PRAGMA busy_timeout = 5000');

$principalBackend = new \Sabre\DAVACL\PrincipalBackend\PDO($pdo);
$carddavBackend = new \Sabre\CardDAV\Backend\PDO($pdo);
$caldavBackend = new \Sabre\CalDAV\Backend\PDO($pdo);

$server = new \Sabre\DAV\Server(array(
    new \Sabre\CalDAV\Principal\Collection($principalBackend),
    new \Sabre\CalDAV\CalendarRootNode($principalBackend, $caldavBackend),
    new \Sabre\CardDAV\AddressBookRoot($principalBackend, $carddavBackend),
));
$server->setBaseUri('/');
$realm = 'SabreDAV';
$server->addPlugin(new \Sabre\DAV\Auth\Plugin(new FerryBasicAuth($pdo, $realm), $realm));
$server->addPlugin(new \Sabre\DAV\Browser\Plugin());
$server->addPlugin(new \Sabre\CalDAV\Plugin());
$server->addPlugin(new \Sabre\CardDAV\Plugin());
$server->addPlugin(new \Sabre\DAVACL\Plugin());
$server->exec();
